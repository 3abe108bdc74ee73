/* Defines a macro named like a member the generated code uses (t->owner_of). */
#ifndef ADV_STATS_MACRO_H
#define ADV_STATS_MACRO_H

#define owner_of adv_owner_field

#endif
