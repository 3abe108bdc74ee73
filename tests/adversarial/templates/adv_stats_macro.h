/* Defines a macro named like a member the generated code uses (core->stats). */
#ifndef ADV_STATS_MACRO_H
#define ADV_STATS_MACRO_H

#define stats adv_stats_field

#endif
