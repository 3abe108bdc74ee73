/* megatron_ref.h - the plain reference of the Megatron MLP (specs/examples/megatron_mlp.lua), for the
 * tests that run it on one process and on several: Z = relu(X W1) W2, in doubles, written out here. */
#ifndef ND_MEGATRON_REF_H
#define ND_MEGATRON_REF_H

enum { MEG_B = 8, MEG_X = 128, MEG_Y = 256, MEG_Z = 64 }; /* the spec's sizes */

static inline void megatron_reference(const float *x, const float *w1, const float *w2, float *z)
{
    static float h[MEG_B * MEG_Y];
    for (int b = 0; b < MEG_B; ++b)
        for (int j = 0; j < MEG_Y; ++j) {
            double s = 0;
            for (int k = 0; k < MEG_X; ++k)
                s += (double)x[b * MEG_X + k] * w1[k * MEG_Y + j];
            h[b * MEG_Y + j] = s > 0 ? (float)s : 0.0f;
        }
    for (int b = 0; b < MEG_B; ++b)
        for (int j = 0; j < MEG_Z; ++j) {
            double s = 0;
            for (int k = 0; k < MEG_Y; ++k)
                s += (double)h[b * MEG_Y + k] * w2[k * MEG_Z + j];
            z[b * MEG_Z + j] = (float)s;
        }
}

#endif
