/* Tests a macro of another header: its content depends on which header a template includes first. */
#ifndef ADV_ORDER_B_H
#define ADV_ORDER_B_H

#ifdef ADV_ORDER_A
#define ADV_ORDER_SCALE 2.0f
#else
#define ADV_ORDER_SCALE 3.0f
#endif

#endif
