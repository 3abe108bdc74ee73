/* Uses a template parameter only inside a macro body: expanded in each variant, with its own value. */
#ifndef ADV_SCALE_H
#define ADV_SCALE_H

#define ADV_SCALED(x) ((x) * (float)NDT_SCALE)

#endif
