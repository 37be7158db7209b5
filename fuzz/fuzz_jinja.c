/* libFuzzer target for the Jinja parser and evaluator: the input is a
 * template, rendered with a chat context like the one engine/template/chat.c builds
 * (messages with roles system/user/assistant/tool, an assistant turn with
 * tool_calls, add_generation_prompt, bos_token, eos_token) plus a tools list;
 * an odd-sized input renders without the generation prompt and tools.
 *
 * Asserted per input (abort() on violation):
 *  - the render takes at most 1 s of this thread's CPU time (with limits a
 *    quarter of the defaults: this build runs under ASan and UBSan);
 *  - the evaluator's own accounting stays within its limits: memory never
 *    above max_bytes, and a successful render within max_steps, max_work
 *    and max_depth;
 *  - a failure has a status, a one-line message, and (unless the template
 *    raised it) no interpreter-internal type name in it (unless quoted from
 *    the template's own text). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "jinja.h"

static cJSON *ctx[2];

static const char MESSAGES[] =
    "[{\"role\": \"system\", \"content\": \"You are a helpful assistant.\"},"
    " {\"role\": \"user\", \"content\": \"What is the weather in Paris?\"},"
    " {\"role\": \"assistant\", \"content\": \"\", \"tool_calls\": [{\"type\": \"function\", \"function\":"
    "   {\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": \"celsius\"}}}]},"
    " {\"role\": \"tool\", \"name\": \"get_weather\", \"content\": \"{\\\"temp\\\": 21}\"},"
    " {\"role\": \"assistant\", \"content\": \"It is 21 \\u00b0C in Paris.\"},"
    " {\"role\": \"user\", \"content\": \"Thanks! \\u4f60\\u597d \\ud83e\\udd99\\n  and bye  \"}]";

static const char TOOLS[] =
    "[{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\": \"Current weather\","
    "  \"parameters\": {\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"},"
    "  \"unit\": {\"type\": \"string\", \"enum\": [\"celsius\", \"fahrenheit\"]}}, \"required\": [\"city\"]}}}]";

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    for (int i = 0; i < 2; i++) {
        ctx[i] = cJSON_CreateObject();
        cJSON *msgs = cJSON_Parse(MESSAGES);
        if (!ctx[i] || !msgs)
            abort();
        cJSON_AddItemToObject(ctx[i], "messages", msgs);
        cJSON_AddBoolToObject(ctx[i], "add_generation_prompt", i == 0);
        cJSON_AddStringToObject(ctx[i], "bos_token", "<s>");
        cJSON_AddStringToObject(ctx[i], "eos_token", "</s>");
        if (i == 0) {
            cJSON *tools = cJSON_Parse(TOOLS);
            if (!tools)
                abort();
            cJSON_AddItemToObject(ctx[i], "tools", tools);
        }
    }
    return 0;
}

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void check_error(const jinja_error *e, const char *stage, const uint8_t *data, size_t size)
{
    if (e->code == JINJA_OK || e->msg[0] == 0 || strchr(e->msg, '\n')) {
        fprintf(stderr, "%s: bad error (code %d, '%s')\n", stage, e->code, e->msg);
        abort();
    }
    if (e->code == JINJA_ERAISE)
        return;
    static const char *const INTERNAL[] = {"IntegerValue", "FloatValue", "StringValue", "ArrayValue",
                                           "ObjectValue", "NullValue", "UndefinedValue", "BooleanValue",
                                           "TupleValue", "FunctionValue", "NumericValue"};
    for (size_t i = 0; i < sizeof INTERNAL / sizeof INTERNAL[0]; i++)
        if (strstr(e->msg, INTERNAL[i]) && !memmem(data, size, INTERNAL[i], strlen(INTERNAL[i]))) {
            fprintf(stderr, "%s: message names an internal type: '%s'\n", stage, e->msg);
            abort();
        }
    char line[700];
    jinja_error_format(e, line, sizeof line);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    jinja_error e;
    double t0 = cpu_now();
    jinja_template *t = jinja_parse((const char *)data, size, &e);
    if (!t) {
        check_error(&e, "parse", data, size);
        return 0;
    }
    jinja_limits lim = {0};
    lim.max_steps = JINJA_DEFAULT_MAX_STEPS / 4;
    lim.max_work = JINJA_DEFAULT_MAX_WORK / 4;
    lim.max_bytes = JINJA_DEFAULT_MAX_BYTES / 4;
    lim.max_depth = JINJA_DEFAULT_MAX_DEPTH;
    lim.now = 1700000000;
    jinja_stats st;
    size_t len = 0;
    char *out = jinja_render_stats(t, ctx[size & 1], &lim, &len, &st, &e);
    double secs = cpu_now() - t0;
    if (secs > 1.0) {
        fprintf(stderr, "render took %.2f s of CPU (steps %llu, work %llu, bytes %zu): %s\n", secs,
                (unsigned long long)st.steps, (unsigned long long)st.work, st.bytes, out ? "ok" : e.msg);
        abort();
    }
    if (st.bytes > lim.max_bytes) {
        fprintf(stderr, "render used %zu bytes, over its limit of %zu\n", st.bytes, lim.max_bytes);
        abort();
    }
    if (out) {
        if (st.steps > lim.max_steps || st.work > lim.max_work || st.max_depth > lim.max_depth ||
            strlen(out) > len || len > lim.max_bytes) {
            fprintf(stderr, "render succeeded past its limits: steps %llu work %llu depth %d length %zu\n",
                    (unsigned long long)st.steps, (unsigned long long)st.work, st.max_depth, len);
            abort();
        }
        free(out);
    } else {
        check_error(&e, "render", data, size);
    }
    jinja_free(t);
    return 0;
}
