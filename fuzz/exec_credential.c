/* An exec credential plugin's stdout (ebb_kube_exec_parse): whatever a
 * plugin prints, ebb either takes a credential it can send or refuses the
 * answer naming its field. Checked on every input: a credential taken has
 * a token a header can carry (ebb_kube_token_ok) and/or a certificate
 * with its key, never one without the other, and nothing else; a refusal
 * names one of the ExecCredential's fields (or none, for text that is not
 * an object) and leaves nothing allocated. */
#include "fuzz.h"
#include "ebb/kube.h"

static const char *const fields[] = {
    "", "kind", "apiVersion", "status", "status.token", "status.clientCertificateData",
    "status.clientKeyData", "status.expirationTimestamp",
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct ebb_kube_cred c;
    struct ebb_error err = { 0 };
    bool known = false;
    int rc = ebb_kube_exec_parse("client.authentication.k8s.io/v1", (const char *)data, size, &c, &err);

    if (rc == 0) {
        if (c.token == NULL && c.cert_data == NULL)
            abort();
        if (c.token != NULL && !ebb_kube_token_ok(c.token, strlen(c.token)))
            abort();
        if ((c.cert_data == NULL) != (c.key_data == NULL))
            abort();
        if ((c.cert_data != NULL && c.cert_data[0] == '\0') || (c.key_data != NULL && c.key_data[0] == '\0'))
            abort();
        ebb_kube_cred_clear(&c);
        return 0;
    }
    if (c.token != NULL || c.cert_data != NULL || c.key_data != NULL || err.msg[0] == '\0')
        abort();
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
        known |= strcmp(err.field, fields[i]) == 0;
    if (!known)
        abort();
    return 0;
}
