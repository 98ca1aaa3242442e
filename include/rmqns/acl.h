/* Access control, compatible with RocketMQ's ACL 1.0 clients (Java
 * AclClientRPCHook, mqadmin with tools.yml, the Go and C++ clients): a
 * signed request carries AccessKey and Signature ext fields, Signature =
 * base64(HMAC-SHA1(secretKey, content)), content = the values of every ext
 * field but Signature and _UNIQUE_KEY_QUERY in Java String order of their
 * keys, then the body bytes. Accounts come from a plain_acl.yml file
 * (accessKey, secretKey, admin, whiteRemoteAddress, and
 * globalWhiteRemoteAddresses), read into an immutable snapshot that is
 * published through RCU and re-read on SIGHUP and when the file changes.
 *
 * The signing half (acl_signature, acl_sign_cmd) is shared by the server,
 * rmqns-admin and rmqns-bench; the rest is the server's. */
#ifndef RMQNS_ACL_H
#define RMQNS_ACL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rmqns/remoting.h"

/* base64 of a 20-byte HMAC-SHA1, without the terminating NUL. */
#define ACL_SIGNATURE_LEN 28

#define ACL_EXT_ACCESS_KEY "AccessKey"
#define ACL_EXT_SIGNATURE "Signature"
#define ACL_EXT_SECURITY_TOKEN "SecurityToken"

/* ---- signatures (acl_sign.c) ---- */

/* Java's String.compareTo of two UTF-8 keys: UTF-16 code-unit order, which
 * differs from byte order only for characters past U+FFFF. */
int acl_key_compare(const char *a, const char *b);

/* The signature of cmd's ext fields and body under secret, into
 * out[ACL_SIGNATURE_LEN + 1]. RMQNS_OK, RMQNS_ENOMEM, or RMQNS_EIO when
 * libcrypto fails. */
int acl_signature(const struct remoting_cmd *cmd, const char *secret, char *out);

/* A signed copy of a command's ext fields, owned by the caller. */
struct acl_signed {
	struct remoting_ext_field *ext;
	char signature[ACL_SIGNATURE_LEN + 1];
};

/* Signs cmd as a Java ACL client does: AccessKey and Signature, then its
 * ext fields (any AccessKey or Signature it had dropped), all but
 * Signature signed together with the body. cmd->ext then points into s
 * until acl_signed_free. */
int acl_sign_cmd(struct remoting_cmd *cmd, const char *access_key, const char *secret_key,
		 struct acl_signed *s);
void acl_signed_free(struct acl_signed *s);

/* ---- remote addresses (acl_addr.c) ---- */

struct acl_ip {
	int family; /* AF_INET or AF_INET6; 0 = not an address */
	uint8_t b[16];
};

enum acl_addr_kind {
	ACL_ADDR_NONE = 0, /* blank: matches nothing */
	ACL_ADDR_ANY,      /* "*", "*.*.*.*", "*:*:*:*:*:*:*:*" */
	ACL_ADDR_SET,      /* exact addresses: one, "a,b,c" or "192.168.1.{1,2}" */
	ACL_ADDR_RANGE4,   /* "192.168.0.*", "192.168.1.1-10", "10.*.*.*" */
};

struct acl_addr {
	enum acl_addr_kind kind;
	struct acl_ip *set; /* ACL_ADDR_SET: n entries, owned */
	size_t n;
	uint8_t lo[4], hi[4]; /* ACL_ADDR_RANGE4: each byte's bounds */
};

/* Parses one whiteRemoteAddress in Java's forms (above). As Java does, the
 * segments after the first '*' or range of an IPv4 pattern are not looked
 * at. IPv6 is accepted exact, in lists and as "*:*:*:*:*:*:*:*"; IPv6
 * ranges are refused. 0, or RMQNS_EINVAL with a reason in err. */
int acl_addr_parse(const char *pattern, struct acl_addr *out, char *err, size_t errlen);
void acl_addr_free(struct acl_addr *a);
bool acl_addr_match(const struct acl_addr *a, const struct acl_ip *ip);

/* The address of a peer named "1.2.3.4:port" or "[::1]:port" (as the
 * network module names them); an IPv4-mapped IPv6 address becomes IPv4.
 * false when it is neither. */
bool acl_ip_of_peer(const char *peer, struct acl_ip *out);

/* ---- the accounts file (acl_accounts.c) ---- */

struct acl_account {
	char *access_key;
	char *secret_key;
	bool admin;
	struct acl_addr white;
};

/* An immutable snapshot of one accounts file. */
struct acl_accounts {
	struct acl_account *accounts; /* sorted by access_key (strcmp) */
	size_t n;
	struct acl_addr *global_white;
	size_t nglobal;
};

/* Reads plain_acl.yml text. Keys other than accounts and
 * globalWhiteRemoteAddresses, and account keys other than accessKey,
 * secretKey, admin and whiteRemoteAddress, are ignored, so a broker's file
 * works unchanged. As in Java, both keys must be longer than 6 characters.
 * NULL with a reason in err (never a secret) on a file that does not parse
 * or holds a bad entry, or out of memory. */
struct acl_accounts *acl_accounts_parse(const char *text, size_t len, char *err, size_t errlen);
/* The same from a file. */
struct acl_accounts *acl_accounts_load(const char *path, char *err, size_t errlen);
void acl_accounts_free(struct acl_accounts *a);
const struct acl_account *acl_accounts_find(const struct acl_accounts *a, const char *access_key);

/* ---- the verdict (acl_check.c) ---- */

enum acl_class {
	ACL_CLASS_READ = 0,   /* any client request not below */
	ACL_CLASS_ADMIN,      /* changes state: 100, 102, 205, 216, 217, 318, 327;
			       * the controller's 1009, 1011, 1002 with designateElect */
	ACL_CLASS_BROKER,     /* 103, 104, 322, 904; the controller's 1001-1003, 1012, 1013 */
};

enum acl_verdict {
	ACL_PASS = 0,
	ACL_UNSIGNED,        /* no AccessKey, or AccessKey without Signature */
	ACL_UNKNOWN_KEY,     /* the AccessKey is no account's */
	ACL_BAD_SIGNATURE,   /* the signature does not match the account's secret */
	ACL_NOT_ADMIN,       /* a valid signature, by an account without admin: true */
	ACL_VERDICT_COUNT
};

/* The class of a request code; the controller's codes (904, 1001-1013)
 * are classed here too, so that aclBrokerRequests governs both ports. */
enum acl_class acl_class_of(int32_t code);
/* The class of one request: its code's, but an ELECT_MASTER with
 * designateElect=true (an operator's election) is ACL_CLASS_ADMIN. */
enum acl_class acl_class_of_cmd(const struct remoting_cmd *cmd);

/* Java's order: the global white list passes without a signature; then
 * an access key must be present and known; the account's white list
 * passes; else the signature must match; then, when need_admin, the
 * account must be an admin. remark (optional) gets the answer's remark
 * for a refusal: which case, the access key, never a secret. */
enum acl_verdict acl_check(const struct acl_accounts *a, const struct remoting_cmd *cmd,
			   const struct acl_ip *peer, bool need_admin, char *remark, size_t remark_len);

/* The reason label of a refusal in /metrics ("unsigned", ...). */
const char *acl_verdict_name(enum acl_verdict v);

/* ---- the running check (acl_watch.c) ---- */

struct acl;

struct acl_params {
	bool enable;          /* aclEnable */
	bool read_requests;   /* aclReadRequests */
	bool broker_requests; /* aclBrokerRequests */
	const char *file;     /* aclFile */
};

/* Reads the file and, when enabled, starts the thread that re-reads it
 * when it changes (a stat at least once a second). With enable false it
 * reads nothing and checks nothing. NULL with a reason in err when the
 * file cannot be read or does not parse. */
struct acl *acl_create(const struct acl_params *p, char *err, size_t errlen);
void acl_destroy(struct acl *acl);

/* Re-reads the file soon, on the ACL's own thread (SIGHUP). Any thread. */
void acl_request_reload(struct acl *acl);
/* Re-reads it now on the calling thread; 0, or an error (the previous
 * accounts stay, the reason is logged). Not inside a read-side section. */
int acl_reload(struct acl *acl);

/* The check before a request's handler runs, on a reactor or a worker
 * (RCU-registered) thread, for a command from peer ("ip:port"). true: run
 * the handler. false: refused (counted, logged); remark says why, for the
 * caller's code 16 answer. A NULL acl, or one not enabled, lets everything
 * through. */
bool acl_authorize(struct acl *acl, const struct remoting_cmd *cmd, const char *peer, char *remark,
		   size_t remark_len);

#endif
