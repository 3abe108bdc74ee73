/* Defines a macro another header tests. */
#ifndef ADV_ORDER_A_H
#define ADV_ORDER_A_H

#define ADV_ORDER_A 1

#endif
