/* Model logits against llama.cpp's AVX-512 build ("zen4", the CPU library
 * llama.cpp loads on AVX-512 machines), on ggscope's AVX-512 paths: every
 * family, bit for bit (the body: stored_logits.inc). Skipped, visibly, on a
 * CPU without AVX-512 + VNNI. test_model_logits covers llama and qwen2 in
 * that order too, with one-token steps of stories260K. */
#define SL_ZEN4 1
#define SL_BUILD "zen4"
#include "stored_logits.inc"
