/* The RocketMQ remoting protocol: frame cutting, the command model and the
 * JSON and ROCKETMQ binary header codecs (protocol.md §1-§3). Pure functions
 * over byte buffers: no sockets, no threads, no global state. The server,
 * the tools and the tests all link this one implementation. */
#ifndef RMQNS_REMOTING_H
#define RMQNS_REMOTING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "rmqns/buf.h"

/* Largest frame Java accepts, counting the 4-byte length prefix. */
#define REMOTING_DEFAULT_MAX_FRAME 16777216u
/* Smallest legal frameLength value: the header word alone. */
#define REMOTING_MIN_FRAME_LENGTH 4u
/* Bounds checked while decoding a header. */
#define REMOTING_MAX_EXT_FIELDS 1024u

#define REMOTING_FLAG_RESPONSE 0x1
#define REMOTING_FLAG_ONEWAY   0x2

/* The version ordinal rmqns stamps on its answers: V5_3_3, the 5.x release
 * whose NameServer behaviour rmqns follows. */
#define RMQNS_SERVER_VERSION 479

enum remoting_serialize {
	REMOTING_JSON = 0,
	REMOTING_ROCKETMQ = 1,
};

enum remoting_language {
	LANG_UNKNOWN = -1,
	LANG_JAVA = 0, LANG_CPP = 1, LANG_DOTNET = 2, LANG_PYTHON = 3, LANG_DELPHI = 4,
	LANG_ERLANG = 5, LANG_RUBY = 6, LANG_OTHER = 7, LANG_HTTP = 8, LANG_GO = 9,
	LANG_PHP = 10, LANG_OMS = 11, LANG_RUST = 12, LANG_NODE_JS = 13,
};

/* Response codes the NameServer uses (§3.1). */
enum remoting_response_code {
	RSP_SUCCESS = 0,
	RSP_SYSTEM_ERROR = 1,
	RSP_SYSTEM_BUSY = 2,
	RSP_REQUEST_CODE_NOT_SUPPORTED = 3,
	RSP_NO_PERMISSION = 16,
	RSP_TOPIC_NOT_EXIST = 17,
	RSP_QUERY_NOT_FOUND = 22,
};

/* Request codes (protocol.md §4): the one list the server, the tools and
 * the tests share. */
enum request_code {
	REQ_PUT_KV_CONFIG = 100,
	REQ_GET_KV_CONFIG = 101,
	REQ_DELETE_KV_CONFIG = 102,
	REQ_REGISTER_BROKER = 103,
	REQ_UNREGISTER_BROKER = 104,
	REQ_GET_ROUTEINFO_BY_TOPIC = 105,
	REQ_GET_BROKER_CLUSTER_INFO = 106,
	REQ_WIPE_WRITE_PERM_OF_BROKER = 205,
	REQ_GET_ALL_TOPIC_LIST_FROM_NAMESERVER = 206,
	REQ_DELETE_TOPIC_IN_BROKER = 215, /* to a broker (rmqns-admin deleteTopic), never served here */
	REQ_DELETE_TOPIC_IN_NAMESRV = 216,
	REQ_REGISTER_TOPIC_IN_NAMESRV = 217,
	REQ_GET_KVLIST_BY_NAMESPACE = 219,
	REQ_GET_TOPICS_BY_CLUSTER = 224,
	REQ_GET_SYSTEM_TOPIC_LIST_FROM_NS = 304,
	REQ_GET_UNIT_TOPIC_LIST = 311,
	REQ_GET_HAS_UNIT_SUB_TOPIC_LIST = 312,
	REQ_GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST = 313,
	REQ_UPDATE_NAMESRV_CONFIG = 318,
	REQ_GET_NAMESRV_CONFIG = 319,
	REQ_QUERY_DATA_VERSION = 322,
	REQ_ADD_WRITE_PERM_OF_BROKER = 327,
	REQ_GET_BROKER_MEMBER_GROUP = 901,
	REQ_BROKER_HEARTBEAT = 904,
	REQ_NOTIFY_MIN_BROKER_ID_CHANGE = 905, /* sent by the server (notify.h) */
};

struct remoting_ext_field {
	const char *key;   /* never NULL in a decoded command */
	const char *value; /* never NULL in a decoded command; "" allowed */
};

/* One RemotingCommand. In a decoded command every pointer refers either
 * into the frame it was decoded from (body) or into `storage`, which the
 * command owns; free it with remoting_cmd_release(). In a command built for
 * encoding the caller owns whatever the pointers refer to. */
struct remoting_cmd {
	int32_t code;
	int32_t language;  /* enum remoting_language */
	int32_t version;
	int32_t opaque;
	int32_t flag;
	const char *remark;             /* NULL = absent */
	struct remoting_ext_field *ext; /* ext_count entries */
	uint32_t ext_count;
	bool ext_present;               /* write "extFields" even when empty */
	const uint8_t *body;            /* NULL or body_len bytes */
	uint32_t body_len;
	enum remoting_serialize serialize;
	void *storage;                  /* decoder-owned strings and ext array */
};

/* ---- frames ---- */

/* Looks at the bytes received so far. RMQNS_OK with *frame_size = bytes of
 * the first whole frame (length prefix included); RMQNS_EAGAIN when more
 * bytes are needed; RMQNS_ETOOBIG for a frame above max_frame (prefix
 * included; 0 means REMOTING_DEFAULT_MAX_FRAME); RMQNS_EPROTO for a
 * negative or tiny length, a header length beyond the frame, or a
 * serialize type other than 0 and 1. The header word is checked as soon as
 * its 8 bytes are in, before the rest arrives. */
int remoting_frame_cut(const uint8_t *data, size_t len, uint32_t max_frame, size_t *frame_size);

/* Decodes one whole frame (as cut above). body points into `frame`, which
 * must outlive the command. On error *cmd holds nothing to release.
 * Errors: RMQNS_EPROTO (framing, binary header lengths, a NUL byte inside
 * binary header text, a JSON language ordinal past the enum), RMQNS_EJSON
 * (a JSON header that does not parse, is not an object, or has a member of
 * the wrong type), RMQNS_ETOOBIG (more than REMOTING_MAX_EXT_FIELDS),
 * RMQNS_ENOMEM. Each of them means: close the connection.
 *
 * JSON headers: members in any order, unknown ones ignored; code, flag,
 * version, opaque absent or null = 0, else an integer, an integral decimal
 * (100.0, 1e2) or decimal text, within int32 (past it, or with a fraction,
 * is RMQNS_EJSON: fastjson cannot put it in Java's int either); language
 * absent = JAVA, null or an unknown name = LANG_UNKNOWN, names matched
 * exactly then case-insensitively, integers as ordinals; remark "" stays ""
 * (present), null = absent; ext values and the remark that are numbers keep
 * the exact text the client wrote, of any length and form (12345678901234567000,
 * -0, 1e-7, 1.50: what fastjson gives a String for an integer, and never a
 * reformatted double), booleans become "true"/"false", containers their
 * compact JSON text (strings in fastjson's default form, numbers as
 * written, of any size), null drops the entry; in any string, \u0000 (no C
 * string can hold it), a lone surrogate escape (not UTF-8; JSON.stringify
 * writes one for a broken string) and each ill-formed UTF-8 sequence (as
 * Java's decoder cuts them) read as U+FFFD, which re-encodes as U+FFFD; a
 * repeated member or ext key keeps its first position and its last value;
 * serializeTypeCurrentRPC is ignored (the header word decides). ext keeps
 * the order of the wire.
 * Binary headers: remark length 0 = absent; entries with an empty key or
 * value are dropped; ext_present = the ext section is not empty; each
 * ill-formed UTF-8 sequence in the remark, a key or a value reads as
 * U+FFFD, as in a JSON header. */
int remoting_decode(const uint8_t *frame, size_t frame_size, struct remoting_cmd *cmd);

/* Decodes a header alone (as found between header word and body). */
int remoting_decode_header(const uint8_t *hdr, size_t len, enum remoting_serialize ser,
			   struct remoting_cmd *cmd);

void remoting_cmd_release(struct remoting_cmd *cmd);

/* Appends the length prefix, header word and header of `cmd`, sized for a
 * body of body_len bytes which the caller sends next (the body pointer of
 * cmd is ignored). Lets cached bodies go out without a copy. On error
 * (RMQNS_ETOOBIG: header past 16 MiB - 1 or frame past INT32_MAX; ENOMEM)
 * `out` keeps its old length.
 *
 * JSON headers come out as Java writes them: members sorted, no blanks,
 * remark left out only when NULL ("" is written as ""), extFields written
 * when ext_present or ext_count > 0, entries with a NULL key or value
 * skipped, text escaped in fastjson's default form, language by name
 * ("UNKNOWN" for anything outside the enum, which reads back as
 * LANG_UNKNOWN), serializeTypeCurrentRPC from cmd->serialize. Binary
 * headers: code and version cut to 16 bits as Java does, NULL and "" remark
 * both length 0, a language outside the enum as byte 0xFF (read back as
 * unknown), entries with a NULL key or value skipped, "" values written
 * with length 0 (which readers take as null). */
int remoting_encode_head(const struct remoting_cmd *cmd, uint32_t body_len, struct buf *out);
/* Appends the whole frame: head and cmd->body. */
int remoting_encode(const struct remoting_cmd *cmd, struct buf *out);
/* Appends just the header bytes in the given serialization. */
int remoting_encode_header(const struct remoting_cmd *cmd, enum remoting_serialize ser,
			   struct buf *out);

/* Prepares a request of ours (a notice or a call): JAVA,
 * RMQNS_SERVER_VERSION, no ext, no body. */
static inline void remoting_request_init(struct remoting_cmd *cmd, int32_t code, int32_t opaque,
					 int32_t flag, enum remoting_serialize ser)
{
	*cmd = (struct remoting_cmd){ .code = code, .language = LANG_JAVA,
				      .version = RMQNS_SERVER_VERSION, .opaque = opaque,
				      .flag = flag, .serialize = ser };
}

/* Prepares the answer to `req` (§2.6): same opaque, response flag, JAVA,
 * RMQNS_SERVER_VERSION, the request's serialization, no ext, no body.
 * (Inline: a handler fills its answer in without a call.) */
static inline void remoting_response_init(struct remoting_cmd *rsp, const struct remoting_cmd *req,
					  int32_t code, const char *remark)
{
	memset(rsp, 0, sizeof(*rsp));
	rsp->code = code;
	rsp->language = LANG_JAVA;
	rsp->version = RMQNS_SERVER_VERSION;
	rsp->opaque = req->opaque;
	rsp->flag = REMOTING_FLAG_RESPONSE;
	rsp->remark = remark;
	rsp->serialize = req->serialize;
}

/* ---- fields ---- */

/* Value of an ext field, or NULL when absent. */
const char *remoting_ext_get(const struct remoting_cmd *cmd, const char *key);
/* Java-style typed reads (§2.7). Return false when absent or unparseable. */
bool remoting_ext_get_long(const struct remoting_cmd *cmd, const char *key, int64_t *out);
bool remoting_ext_get_int(const struct remoting_cmd *cmd, const char *key, int32_t *out);
/* true only for "true" in any case; absent or anything else is false. */
bool remoting_ext_get_bool(const struct remoting_cmd *cmd, const char *key);

/* Several ext fields read in one call, each as the reads above read it
 * (the first of a repeated key counts): a handler's whole header in one
 * pass over the fields. */
enum remoting_field_kind {
	REMOTING_FIELD_STRING, /* value */
	REMOTING_FIELD_LONG,   /* value; ok and num as remoting_ext_get_long */
	REMOTING_FIELD_BOOL,   /* value; ok as remoting_ext_get_bool */
};
struct remoting_field {
	const char *key;
	enum remoting_field_kind kind;
	/* filled in */
	const char *value; /* NULL when absent */
	bool ok;
	int64_t num;
};
void remoting_ext_read(const struct remoting_cmd *cmd, struct remoting_field *fields, size_t n);

static inline bool remoting_is_response(const struct remoting_cmd *c) { return c->flag & REMOTING_FLAG_RESPONSE; }
static inline bool remoting_is_oneway(const struct remoting_cmd *c) { return c->flag & REMOTING_FLAG_ONEWAY; }

/* The enum name of a request code above without its REQ_ prefix
 * ("GET_ROUTEINFO_BY_TOPIC"); NULL for a code not in the list. */
const char *remoting_request_name(int32_t code);

/* "JAVA", "GO", ... or "UNKNOWN". */
const char *remoting_language_name(int32_t language);
/* A name (exact, then case-insensitive) to its code; LANG_UNKNOWN otherwise. */
int32_t remoting_language_parse(const char *name);

#endif
