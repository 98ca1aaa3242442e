/* A YAML text loaded into a libyaml document, with a readable reason
 * ("not YAML: ... at line L column C") when it does not parse: the
 * accounts file (acl/) and the HTTP port's web configuration (http/). */
#ifndef RMQNS_YAML_DOC_H
#define RMQNS_YAML_DOC_H

#include <stddef.h>

#include <yaml.h>

/* 0 with *doc loaded (yaml_document_delete it), or RMQNS_ENOMEM /
 * RMQNS_EINVAL with the reason in err. */
int yaml_doc_load(yaml_document_t *doc, const char *text, size_t len, char *err, size_t errlen);

#endif
