/* Text for rmqns_err codes. Owns only the table below; every module returns
 * these codes and callers turn them into words here. */
#include "rmqns/err.h"

const char *rmqns_strerror(int err)
{
	switch (err) {
	case RMQNS_OK: return "success";
	case RMQNS_ENOMEM: return "out of memory";
	case RMQNS_EINVAL: return "invalid argument or malformed input";
	case RMQNS_EAGAIN: return "more input needed";
	case RMQNS_ETOOBIG: return "length or count beyond its limit";
	case RMQNS_EPROTO: return "protocol violation";
	case RMQNS_EJSON: return "malformed JSON";
	case RMQNS_ECRC: return "crc32 mismatch";
	case RMQNS_EZLIB: return "compressed data does not inflate";
	case RMQNS_ENOTFOUND: return "not found";
	case RMQNS_EFULL: return "queue full";
	case RMQNS_EIO: return "I/O error";
	case RMQNS_ECLOSED: return "closed";
	case RMQNS_EPERM: return "not permitted";
	}
	return "unknown error";
}
