/* ebb/selector.h: label selectors and node selector requirements, exact to
 * k8s.io/apimachinery/pkg/labels and k8s.io/component-helpers nodeaffinity.
 *
 * A compiled selector holds references to interned keys and values, so
 * matching is pointer comparison. Pure functions; any thread that owns the
 * interner (the engine thread).
 *
 * NULL handling: a NULL `struct ebb_selector *` passed to a match function
 * means "no constraint" and matches everything. A selector that must match
 * nothing (a nil metav1.LabelSelector where the API says so) is a compiled
 * selector with EBB_SEL_NOTHING set; decode.c builds those.
 */
#ifndef EBB_SELECTOR_H
#define EBB_SELECTOR_H

#include "model.h"

/* Parse the string form of labels.Parse: "a=b,c!=d,e in (x,y),f notin (z),
 * g,!h", "==" as "=", "k>5"/"k<5" (Gt/Lt). Whitespace around tokens is
 * allowed; "" gives an empty selector (everything). Keys must be valid
 * qualified names and values valid label values, as the API validates.
 * On error returns EBB_EPARSE and fills err->msg with what was expected and
 * at which character (err->file/line are left to the caller). */
int ebb_selector_parse(const char *s, struct ebb_selector **out, struct ebb_error *err);

/* Build a selector from requirements (used by decode.c for matchLabels /
 * matchExpressions). Takes ownership of `reqs` (array of n) on success. */
int ebb_selector_from_reqs(struct ebb_req *reqs, uint16_t n, struct ebb_selector **out);

/* About the bytes s holds (its arrays and the text of its strings, as if
 * no other object shared them): what a script is charged for one. */
size_t ebb_selector_bytes(const struct ebb_selector *s);

/* A selector matching nothing / everything (freshly allocated). */
struct ebb_selector *ebb_selector_nothing(void);
struct ebb_selector *ebb_selector_everything(void);

/* Copy (new references to every string). NULL in -> NULL out. */
struct ebb_selector *ebb_selector_dup(const struct ebb_selector *s);

bool ebb_selector_matches(const struct ebb_selector *s, const struct ebb_labels *l);
bool ebb_selector_is_empty(const struct ebb_selector *s);   /* no reqs, not NOTHING */

/* Label requirement semantics (In, NotIn, Exists, DoesNotExist; Gt/Lt as
 * node selector requirements: label present and parses as an int64 that is
 * greater/less than r->num). NotIn and DoesNotExist match an absent key. */
bool ebb_req_matches(const struct ebb_req *r, const struct ebb_labels *l);

/* Two requirements as written: key, operator and values (interned, so
 * compared by pointer, in their stored order). */
bool ebb_req_equal(const struct ebb_req *a, const struct ebb_req *b);

/* The API's validation of a label key (a qualified name: optional DNS
 * subdomain prefix and '/', then a name of at most 63 characters) and of a
 * label value (empty, or at most 63 characters of [-A-Za-z0-9_.] starting
 * and ending with an alphanumeric). NULL when valid, else the reason. */
const char *ebb_label_key_problem(const char *s, size_t n);
const char *ebb_label_value_problem(const char *s, size_t n);

/* Text form of a selector, as labels.Selector.String() prints it
 * (requirements sorted by key): for logs and plan output. */
void ebb_selector_format(const struct ebb_selector *s, char *buf, size_t len);

#endif
