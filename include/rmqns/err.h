/* Error codes shared by every module. Functions return 0 or a negative
 * rmqns_err; errno never leaks across a module boundary. */
#ifndef RMQNS_ERR_H
#define RMQNS_ERR_H

enum rmqns_err {
	RMQNS_OK = 0,
	RMQNS_ENOMEM = -1,   /* allocation failed */
	RMQNS_EINVAL = -2,   /* bad argument or malformed input */
	RMQNS_EAGAIN = -3,   /* need more input (frame not complete yet) */
	RMQNS_ETOOBIG = -4,  /* a length or count beyond its limit */
	RMQNS_EPROTO = -5,   /* protocol violation: bad serialize type, lying length */
	RMQNS_EJSON = -6,    /* JSON that does not parse or has the wrong shape */
	RMQNS_ECRC = -7,     /* body crc32 mismatch */
	RMQNS_EZLIB = -8,    /* compressed data that does not inflate */
	RMQNS_ENOTFOUND = -9,
	RMQNS_EFULL = -10,   /* a bounded queue is full */
	RMQNS_EIO = -11,     /* a file or socket operation failed */
	RMQNS_ECLOSED = -12, /* the peer or the component is gone */
	RMQNS_EPERM = -13,   /* refused by policy */
};

/* A short English text for an rmqns_err code; never NULL. */
const char *rmqns_strerror(int err);

#endif
