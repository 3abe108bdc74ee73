/* Chooses a macro by a macro the including template may define: the generated file reads this
 * header once, in the context of the first variant that includes it. */
#ifndef ADV_COND_H
#define ADV_COND_H

#ifdef ADV_FAST
#define ADV_HOW(x) ((x) * 2.0f)
#else
#define ADV_HOW(x) ((x) * 3.0f)
#endif

#endif
