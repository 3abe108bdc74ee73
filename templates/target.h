/*
 * target.h - the vector width of the compile target, for templates and for the probes that bound them
 * (ndrun's machine.c), so that both follow the one target a build compiles for, never one machine.
 *
 * 64 bytes where AVX-512F is enabled, 32 where AVX is, else 16 (SSE2, NEON and the portable targets). A
 * GCC vector wider than the target's registers is lowered piece by piece (a 10x loss on AVX2) and
 * changes the ABI of a function that takes it by value (Clang's -Wpsabi): vectors are declared at this
 * width, and never passed by value. ND_VLANES_E: the lanes of such a vector for elements of E bytes,
 * written as literals because transpose.h pastes them into names (transpose.h asserts they agree).
 */
#ifndef ND_TARGET_H
#define ND_TARGET_H

#if defined(__AVX512F__)
#define ND_VBYTES 64
#define ND_VLANES_1 64
#define ND_VLANES_2 32
#define ND_VLANES_4 16
#define ND_VLANES_8 8
#define ND_VREGS 32 /* vector registers the target names */
#define ND_ISA "AVX-512"
#elif defined(__AVX2__) && defined(__FMA__)
#define ND_VBYTES 32
#define ND_VLANES_1 32
#define ND_VLANES_2 16
#define ND_VLANES_4 8
#define ND_VLANES_8 4
#define ND_VREGS 16
#define ND_ISA "AVX2+FMA"
#elif defined(__AVX__)
#define ND_VBYTES 32
#define ND_VLANES_1 32
#define ND_VLANES_2 16
#define ND_VLANES_4 8
#define ND_VLANES_8 4
#define ND_VREGS 16
#define ND_ISA "AVX"
#elif defined(__aarch64__)
#define ND_VBYTES 16
#define ND_VLANES_1 16
#define ND_VLANES_2 8
#define ND_VLANES_4 4
#define ND_VLANES_8 2
#define ND_VREGS 32
#define ND_ISA "AArch64 NEON"
#else
#define ND_VBYTES 16
#define ND_VLANES_1 16
#define ND_VLANES_2 8
#define ND_VLANES_4 4
#define ND_VLANES_8 2
#define ND_VREGS 16
#define ND_ISA "128-bit vectors"
#endif

#endif
