/* What an API server's answer says, as one line of text for logs and
 * errors (include/ebb/kube.h): a Status's message and its causes, as
 * kubectl shows them; a reason phrase where the Status is silent. */
#include <stdio.h>
#include <stdlib.h>

#include <cjson/cJSON.h>

#include "ebb/kube.h"

void ebb_kube_status_message(int status, const char *body, size_t len, char *out, size_t outlen)
{
    cJSON *j;
    const cJSON *m, *causes, *c;
    size_t n;

    if (status < 0) {
        snprintf(out, outlen, "%s", body && body[0] ? body : ebb_strerror(status));
        return;
    }
    j = cJSON_ParseWithLength(body ? body : "", body ? len : 0);
    m = cJSON_GetObjectItemCaseSensitive(j, "message");
    causes = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "details"), "causes");
    if (cJSON_IsString(m)) {
        n = (size_t)snprintf(out, outlen, "%s", m->valuestring);
        cJSON_ArrayForEach(c, causes) {
            const cJSON *cm = cJSON_GetObjectItemCaseSensitive(c, "message");
            if (cJSON_IsString(cm) && n < outlen)
                n += (size_t)snprintf(out + n, outlen - n, " %s", cm->valuestring);
        }
    } else {
        snprintf(out, outlen, "%.*s", (int)(len < 200 ? len : 200), body ? body : "");
    }
    cJSON_Delete(j);
}

static const char *reason_phrase(int status)
{
    static const struct { int code; const char *text; } t[] = {
        {400, "Bad Request"}, {401, "Unauthorized"}, {403, "Forbidden"}, {404, "Not Found"},
        {405, "Method Not Allowed"}, {406, "Not Acceptable"}, {409, "Conflict"}, {410, "Gone"},
        {413, "Request Entity Too Large"}, {415, "Unsupported Media Type"},
        {422, "Unprocessable Entity"}, {429, "Too Many Requests"},
        {500, "Internal Server Error"}, {502, "Bad Gateway"}, {503, "Service Unavailable"},
        {504, "Gateway Timeout"},
    };
    for (size_t i = 0; i < EBB_ARRAY_LEN(t); i++)
        if (t[i].code == status)
            return t[i].text;
    return "";
}

void ebb_kube_answer_text(const char *what, int status, const char *body, size_t len, char *out,
                          size_t outlen)
{
    const char *sep = what != NULL && *what ? ": " : "";
    char *msg;

    if (out == NULL || outlen == 0)
        return;
    if ((msg = malloc(outlen)) == NULL) {
        snprintf(out, outlen, "%s%s%s", what ? what : "", sep, status < 0 ? ebb_strerror(status) : "");
        return;
    }
    ebb_kube_status_message(status, body, len, msg, outlen);
    if (status < 0)
        snprintf(out, outlen, "%s%s%s", what ? what : "", sep, msg);
    else   /* as kubectl: the Status's message says what (a reason phrase when it is silent) */
        snprintf(out, outlen, "%s%s%d %s", what ? what : "", sep, status, msg[0] ? msg : reason_phrase(status));
    free(msg);
}
