/* Sampler: greedy, determinism per seed, top-k / top-p / min-p semantics,
 * repetition penalty, temperature, and the inspector figures. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "sampler.h"

static sampler_params off(void)
{
    sampler_params p = {.temp = 1.0f, .top_k = 0, .top_p = 1.0f, .min_p = 0.0f,
                        .repeat_penalty = 1.0f, .repeat_last_n = 64, .seed = 7};
    return p;
}

/* logits of probabilities p (log p) */
static void from_probs(const double *p, float *lg, int n)
{
    for (int i = 0; i < n; i++)
        lg[i] = (float)log(p[i]);
}

static void test_greedy(void **state)
{
    (void)state;
    float lg[6] = {0.5f, 2.0f, -1.0f, 2.0f, 1.9f, -INFINITY};
    sampler_params p = off();
    p.temp = 0.0f;
    sampler *s = sampler_new(&p, 6);
    assert_non_null(s);
    sampler_result r;
    /* ties go to the lowest id */
    assert_int_equal(sampler_sample(s, lg, &r), 1);
    assert_int_equal(r.token, 1);
    assert_int_equal(r.n_alt, 5);
    assert_int_equal(r.alt_id[0], 1);
    assert_int_equal(r.alt_id[1], 3);
    assert_int_equal(r.alt_id[2], 4);
    /* probabilities of the softmax at T = 1 */
    double z = exp(0.5) + 2 * exp(2.0) + exp(-1.0) + exp(1.9);
    assert_float_equal(r.prob, exp(2.0) / z, 1e-6);
    assert_float_equal(r.alt_prob[2], exp(1.9) / z, 1e-6);
    double ent = 0;
    double ps[5] = {exp(0.5) / z, exp(2.0) / z, exp(-1.0) / z, exp(2.0) / z, exp(1.9) / z};
    for (int i = 0; i < 5; i++)
        ent -= ps[i] * log(ps[i]);
    assert_float_equal(r.entropy, ent, 1e-5);
    /* all -inf / NaN: unusable */
    float bad[6] = {NAN, -INFINITY, NAN, -INFINITY, NAN, NAN};
    assert_int_equal(sampler_sample(s, bad, NULL), -1);
    sampler_free(s);
}

static void run_seq(uint64_t seed, int32_t *out, int n)
{
    float lg[50];
    for (int i = 0; i < 50; i++)
        lg[i] = (float)((i * 37) % 11) * 0.3f;
    sampler_params p = sampler_default_params();
    p.seed = seed;
    p.top_k = 0;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    sampler *s = sampler_new(&p, 50);
    assert_non_null(s);
    for (int i = 0; i < n; i++) {
        out[i] = sampler_sample(s, lg, NULL);
        sampler_accept(s, out[i]);
    }
    sampler_free(s);
}

static void test_determinism(void **state)
{
    (void)state;
    int32_t a[200], b[200], c[200];
    run_seq(1234, a, 200);
    run_seq(1234, b, 200);
    run_seq(1235, c, 200);
    assert_memory_equal(a, b, sizeof a);
    assert_memory_not_equal(a, c, sizeof a);
    /* reset re-seeds: same stream again */
    sampler_params p = off();
    p.seed = 99;
    sampler *s = sampler_new(&p, 4);
    uint64_t x1 = sampler_rand_u64(s), x2 = sampler_rand_u64(s);
    sampler_reset(s);
    assert_true(sampler_rand_u64(s) == x1);
    assert_true(sampler_rand_u64(s) == x2);
    for (int i = 0; i < 1000; i++) {
        double u = sampler_rand_unit(s);
        assert_true(u >= 0.0 && u < 1.0);
    }
    sampler_free(s);
}

/* Draw many times; count each token. */
static void histogram(const sampler_params *p, const float *lg, int nv, int draws, int *cnt)
{
    sampler *s = sampler_new(p, (uint32_t)nv);
    assert_non_null(s);
    memset(cnt, 0, sizeof(int) * nv);
    for (int i = 0; i < draws; i++) {
        int32_t t = sampler_sample(s, lg, NULL);
        assert_true(t >= 0 && t < nv);
        cnt[t]++;
    }
    sampler_free(s);
}

static void test_top_k(void **state)
{
    (void)state;
    double pr[6] = {0.05, 0.30, 0.10, 0.25, 0.20, 0.10};
    float lg[6];
    from_probs(pr, lg, 6);
    sampler_params p = off();
    p.top_k = 3; /* keeps 1, 3, 4 */
    int cnt[6];
    histogram(&p, lg, 6, 30000, cnt);
    assert_int_equal(cnt[0] + cnt[2] + cnt[5], 0);
    /* renormalized: 0.30/0.75 = 0.4, 0.25/0.75, 0.20/0.75 */
    assert_true(fabs(cnt[1] / 30000.0 - 0.4) < 0.015);
    assert_true(fabs(cnt[3] / 30000.0 - 1.0 / 3) < 0.015);
    assert_true(fabs(cnt[4] / 30000.0 - 0.8 / 3) < 0.015);
}

static void test_top_p(void **state)
{
    (void)state;
    double pr[5] = {0.5, 0.2, 0.15, 0.1, 0.05};
    float lg[5];
    from_probs(pr, lg, 5);
    sampler_params p = off();
    p.top_p = 0.8f; /* 0.5 + 0.2 = 0.7 < 0.8, + 0.15 = 0.85 >= 0.8: keeps 0, 1, 2 */
    int cnt[5];
    histogram(&p, lg, 5, 20000, cnt);
    assert_int_equal(cnt[3] + cnt[4], 0);
    assert_true(cnt[2] > 0);
    assert_true(fabs(cnt[0] / 20000.0 - 0.5 / 0.85) < 0.02);
    sampler *s = sampler_new(&p, 5);
    sampler_result r;
    sampler_sample(s, lg, &r);
    assert_int_equal(r.n_candidates, 3);
    /* the inspector's probabilities are those of the full distribution */
    assert_float_equal(r.alt_prob[0], 0.5, 1e-5);
    sampler_free(s);
}

static void test_min_p(void **state)
{
    (void)state;
    double pr[5] = {0.4, 0.3, 0.15, 0.1, 0.05};
    float lg[5];
    from_probs(pr, lg, 5);
    sampler_params p = off();
    p.min_p = 0.3f; /* threshold 0.12: keeps 0, 1, 2 */
    int cnt[5];
    histogram(&p, lg, 5, 20000, cnt);
    assert_int_equal(cnt[3] + cnt[4], 0);
    assert_true(cnt[2] > 0);
    assert_true(fabs(cnt[2] / 20000.0 - 0.15 / 0.85) < 0.02);
}

static void test_temperature(void **state)
{
    (void)state;
    double pr[2] = {0.8, 0.2};
    float lg[2];
    from_probs(pr, lg, 2);
    sampler_params p = off();
    p.temp = 0.5f; /* p^2 renormalized: 0.64/0.68 */
    int cnt[2];
    histogram(&p, lg, 2, 20000, cnt);
    assert_true(fabs(cnt[0] / 20000.0 - 0.64 / 0.68) < 0.01);
    p.temp = 1e6f; /* nearly uniform */
    histogram(&p, lg, 2, 20000, cnt);
    assert_true(fabs(cnt[0] / 20000.0 - 0.5) < 0.02);
}

static void test_repeat_penalty(void **state)
{
    (void)state;
    float lg[4] = {3.0f, 2.9f, -1.0f, -1.1f};
    sampler_params p = off();
    p.temp = 0.0f;
    p.repeat_penalty = 1.5f;
    p.repeat_last_n = 2;
    sampler *s = sampler_new(&p, 4);
    assert_int_equal(sampler_sample(s, lg, NULL), 0);
    sampler_accept(s, 0); /* 3.0 / 1.5 = 2.0 < 2.9 */
    assert_int_equal(sampler_sample(s, lg, NULL), 1);
    sampler_accept(s, 1);
    sampler_accept(s, 1); /* window of 2 now holds 1, 1: token 0 free again */
    sampler_result r;
    assert_int_equal(sampler_sample(s, lg, &r), 0);
    /* negative logits are multiplied: -1.0 * 1.5 < -1.1 */
    float lg2[4] = {-1.0f, -1.1f, -5.0f, -6.0f};
    sampler_reset(s);
    sampler_accept(s, 0);
    assert_int_equal(sampler_sample(s, lg2, NULL), 1);
    /* the input is not modified */
    assert_float_equal(lg2[0], -1.0f, 0);
    sampler_free(s);
    /* bad parameters */
    p.repeat_penalty = 0.0f;
    assert_null(sampler_new(&p, 4));
    assert_null(sampler_new(NULL, 0));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_greedy),       cmocka_unit_test(test_determinism),
        cmocka_unit_test(test_top_k),        cmocka_unit_test(test_top_p),
        cmocka_unit_test(test_min_p),        cmocka_unit_test(test_temperature),
        cmocka_unit_test(test_repeat_penalty),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
