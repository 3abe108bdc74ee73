/* Uses a template parameter outside a macro body: its value would be the first variant's. */
#ifndef ADV_EAGER_H
#define ADV_EAGER_H

static const float adv_eager_scale = (float)NDT_SCALE;

#endif
