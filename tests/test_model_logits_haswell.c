/* Model logits against llama.cpp's AVX2 build ("haswell", the CPU library
 * llama.cpp loads on AVX2 machines without AVX-512), on ggscope's AVX2 paths
 * with GGSCOPE_LLAMA_VARIANT=haswell: every family, bit for bit (the body:
 * stored_logits.inc). Skipped, visibly, on a CPU without AVX2 + FMA + F16C. */
#define SL_ZEN4 0
#define SL_BUILD "haswell"
#include "stored_logits.inc"
