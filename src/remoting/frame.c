/* Frame cutting (protocol.md §1.1-§1.2): finds where the first whole frame
 * in a receive buffer ends and rejects the framings Java closes on. Reads
 * only the length prefix and header word; never looks at the header. */
#include "rmqns/err.h"
#include "rmqns/remoting.h"

int remoting_frame_cut(const uint8_t *data, size_t len, uint32_t max_frame, size_t *frame_size)
{
	if (max_frame == 0)
		max_frame = REMOTING_DEFAULT_MAX_FRAME;
	if (len < 4)
		return RMQNS_EAGAIN;

	int32_t flen = (int32_t)rd_be32(data);
	if (flen < (int32_t)REMOTING_MIN_FRAME_LENGTH)
		return RMQNS_EPROTO;
	uint64_t total = (uint64_t)(uint32_t)flen + 4;
	if (total > max_frame)
		return RMQNS_ETOOBIG;

	/* The header word is judged as soon as it is in, so a peer sending
	 * garbage is dropped before we wait for (or buffer) its body. */
	if (len < 8)
		return RMQNS_EAGAIN;
	uint32_t word = rd_be32(data + 4);
	uint32_t ser = word >> 24;
	uint32_t hlen = word & 0x00FFFFFFu;
	if (ser != REMOTING_JSON && ser != REMOTING_ROCKETMQ)
		return RMQNS_EPROTO;
	if (hlen > (uint32_t)flen - 4)
		return RMQNS_EPROTO;

	if (len < total)
		return RMQNS_EAGAIN;
	*frame_size = (size_t)total;
	return RMQNS_OK;
}
