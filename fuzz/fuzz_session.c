/* libFuzzer target for the chat session-file parser (what /load reads):
 * chs_session_parse on any bytes; on success every message is walked and
 * checked against the parser's promises (valid UTF-8, roles, lengths). */
#include <stdint.h>
#include <string.h>

#include "chatsession.h"

static volatile uint64_t sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    chs_settings base = chs_default_settings();
    chs_file f;
    char msg[512];
    msg[0] = 0;
    if (chs_session_parse((const char *)data, size, &base, &f, msg, sizeof msg) != 0) {
        if (!msg[0] || f.m || f.n || f.system)
            __builtin_trap();   /* a failure always says why and leaves nothing */
        return 0;
    }
    if (!f.system || f.n > CHS_FILE_MAX_MESSAGES)
        __builtin_trap();
    sink += strlen(f.system);
    for (size_t i = 0; i < f.n; i++) {
        const chs_msg *m = &f.m[i];
        if (strcmp(m->role, "user") && strcmp(m->role, "assistant"))
            __builtin_trap();
        if (strlen(m->content) != m->len)
            __builtin_trap();
        for (size_t k = 0; k < m->len; k++)
            if ((unsigned char)m->content[k] < 0x20 && m->content[k] != '\t' && m->content[k] != '\n' &&
                m->content[k] != '\r')
                __builtin_trap();
        sink += m->len + m->dropped;
    }
    sink += (uint64_t)f.st.n_predict;
    chs_file_free(&f);
    return 0;
}
