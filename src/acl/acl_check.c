/* The ACL verdict on one request (acl.h), in the order of Java's
 * PlainPermissionManager.validate: global white list, access key, the
 * account's white list, signature, admin. Pure: no state, no logging. */
#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>

#include "rmqns/acl.h"
#include "rmqns/err.h"

enum acl_class acl_class_of(int32_t code)
{
	switch (code) {
	case REQ_PUT_KV_CONFIG:
	case REQ_DELETE_KV_CONFIG:
	case REQ_WIPE_WRITE_PERM_OF_BROKER:
	case REQ_DELETE_TOPIC_IN_NAMESRV:
	case REQ_REGISTER_TOPIC_IN_NAMESRV:
	case REQ_UPDATE_NAMESRV_CONFIG:
	case REQ_ADD_WRITE_PERM_OF_BROKER:
	/* the controller's port (controller.md §3): its config and a clean */
	case 1009: /* UPDATE_CONTROLLER_CONFIG */
	case 1011: /* CLEAN_BROKER_DATA */
		return ACL_CLASS_ADMIN;
	case REQ_REGISTER_BROKER:
	case REQ_UNREGISTER_BROKER:
	case REQ_QUERY_DATA_VERSION:
	case REQ_BROKER_HEARTBEAT: /* on both ports */
	/* what brokers send the controller: sync-state changes, elections,
	 * registration and ids */
	case 1001: /* ALTER_SYNC_STATE_SET */
	case 1002: /* ELECT_MASTER */
	case 1003: /* REGISTER_BROKER (controller) */
	case 1012: /* GET_NEXT_BROKER_ID */
	case 1013: /* APPLY_BROKER_ID */
		return ACL_CLASS_BROKER;
	default:
		return ACL_CLASS_READ;
	}
}

/* An election naming the broker to win (mqadmin electMaster) is the
 * operator's; the one a broker triggers for its own set is the broker's.
 * The flag is read as the controller's handler reads it, so no spelling
 * of it passes here as the broker's and runs there as the operator's. */
enum acl_class acl_class_of_cmd(const struct remoting_cmd *cmd)
{
	if (cmd->code == 1002 /* ELECT_MASTER */ && remoting_ext_get_bool(cmd, "designateElect"))
		return ACL_CLASS_ADMIN;
	return acl_class_of(cmd->code);
}

const char *acl_verdict_name(enum acl_verdict v)
{
	switch (v) {
	case ACL_PASS: return "pass";
	case ACL_UNSIGNED: return "unsigned";
	case ACL_UNKNOWN_KEY: return "unknown_access_key";
	case ACL_BAD_SIGNATURE: return "bad_signature";
	case ACL_NOT_ADMIN: return "not_admin";
	case ACL_VERDICT_COUNT: break;
	}
	return "?";
}

/* Access keys are the client's text: shown short and printable only, so
 * a remark (and the log line quoting it) stays one honest line. */
#define KEY_SHOWN 64

static const char *key_shown(const char *ak, char *out)
{
	size_t i = 0;

	for (; ak[i] && i < KEY_SHOWN; i++)
		out[i] = ak[i] > ' ' && ak[i] < 0x7F ? ak[i] : '?';
	if (ak[i])
		memcpy(out + i, "...", 4);
	else
		out[i] = '\0';
	return out;
}

enum acl_verdict acl_check(const struct acl_accounts *a, const struct remoting_cmd *cmd,
			   const struct acl_ip *peer, bool need_admin, char *remark, size_t remark_len)
{
	char dummy[1];

	if (!remark || !remark_len) {
		remark = dummy;
		remark_len = sizeof dummy;
	}
	remark[0] = '\0';
	for (size_t i = 0; i < a->nglobal; i++)
		if (acl_addr_match(&a->global_white[i], peer))
			return ACL_PASS;

	const char *ak = remoting_ext_get(cmd, ACL_EXT_ACCESS_KEY);
	if (!ak) {
		snprintf(remark, remark_len, "ACL: unsigned request: code %d needs an AccessKey and a Signature",
			 cmd->code);
		return ACL_UNSIGNED;
	}
	char shown[KEY_SHOWN + 4];
	key_shown(ak, shown);
	const struct acl_account *acc = acl_accounts_find(a, ak);
	if (!acc) {
		snprintf(remark, remark_len, "ACL: unknown access key: no account for AccessKey=%s", shown);
		return ACL_UNKNOWN_KEY;
	}
	if (acl_addr_match(&acc->white, peer))
		return ACL_PASS;

	const char *sig = remoting_ext_get(cmd, ACL_EXT_SIGNATURE);
	if (!sig) {
		snprintf(remark, remark_len, "ACL: unsigned request: AccessKey=%s without a Signature", shown);
		return ACL_UNSIGNED;
	}
	char want[ACL_SIGNATURE_LEN + 1];
	int rc = acl_signature(cmd, acc->secret_key, want);
	if (rc < 0 || strlen(sig) != ACL_SIGNATURE_LEN ||
	    CRYPTO_memcmp(sig, want, ACL_SIGNATURE_LEN) != 0) {
		snprintf(remark, remark_len, "ACL: signature mismatch for AccessKey=%s%s", shown,
			 rc < 0 ? " (could not compute it)" : "");
		return ACL_BAD_SIGNATURE;
	}
	if (need_admin && !acc->admin) {
		snprintf(remark, remark_len, "ACL: account not admin: AccessKey=%s may not send code %d", shown,
			 cmd->code);
		return ACL_NOT_ADMIN;
	}
	return ACL_PASS;
}
