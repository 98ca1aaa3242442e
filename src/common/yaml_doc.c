/* yaml_doc_load (yaml_doc.h). */
#include <stdio.h>

#include "rmqns/err.h"
#include "rmqns/yaml_doc.h"

int yaml_doc_load(yaml_document_t *doc, const char *text, size_t len, char *err, size_t errlen)
{
	yaml_parser_t parser;
	if (!yaml_parser_initialize(&parser)) {
		snprintf(err, errlen, "out of memory");
		return RMQNS_ENOMEM;
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	int rc = RMQNS_OK;
	if (!yaml_parser_load(&parser, doc)) {
		snprintf(err, errlen, "not YAML: %s at line %lu column %lu",
			 parser.problem ? parser.problem : "parse error",
			 (unsigned long)parser.problem_mark.line + 1,
			 (unsigned long)parser.problem_mark.column + 1);
		rc = parser.error == YAML_MEMORY_ERROR ? RMQNS_ENOMEM : RMQNS_EINVAL;
	}
	yaml_parser_delete(&parser);
	return rc;
}
