#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets into tests/fuzz/corpus/<target>/:
request bodies cut out of the captured Java frames in tests/data, plus small
hand-made inputs like the unit tests'. Run from the repository root; the
output is committed, so this only needs running when the seeds change."""
import glob
import json
import os
import struct
import zlib

ROOT = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(ROOT, '..', 'data')
OUT = os.path.join(ROOT, 'corpus')
VERSIONS = [0, 36, 37, 412, 413, 441, -1, 0x7fffffff]


def frames():
    for path in sorted(glob.glob(os.path.join(DATA, '**', '*-c2s-req-*.bin'), recursive=True)):
        raw = open(path, 'rb').read()
        if len(raw) < 8:
            continue
        word = struct.unpack('>I', raw[4:8])[0]
        ser, hlen = word >> 24, word & 0xffffff
        if ser != 0:
            continue
        head = json.loads(raw[8:8 + hlen].decode('utf-8', 'replace'))
        yield path, head, raw[8 + hlen:]


SEEN = set()


def put(target, name, data):
    if (target, data) in SEEN:
        return
    SEEN.add((target, data))
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), 'wb') as f:
        f.write(data)


def version_mode(v):
    best = min(range(6), key=lambda i: abs(VERSIONS[i] - v))
    return best


def compressed_layout(topics, filters, mappings):
    """The compressed RegisterBrokerBody before deflate (protocol.md 5.4)."""
    def s(b):
        return struct.pack('>i', len(b)) + b
    out = s(b'{"counter":3,"stateVersion":1,"timestamp":1700000000000}')
    out += struct.pack('>i', len(topics)) + b''.join(s(t) for t in topics)
    out += s(filters)
    if mappings is not None:
        out += struct.pack('>i', len(mappings)) + b''.join(s(m) for m in mappings)
    return out


def ctl_text(t):
    return struct.pack('>I', len(t)) + t


def ctl_ids(ids):
    return struct.pack('>I', len(ids)) + b''.join(struct.pack('>q', i) for i in ids)


def ctl_events():
    """Controller log entries (controller.h, version 1), in the order a
    broker set lives through them."""
    apply1 = (b'\x01\x02' + ctl_text(b'C1') + ctl_text(b'broker-a') + ctl_text(b'127.0.0.1:30911')
              + struct.pack('>q', 1) + ctl_text(b'127.0.0.1:30911;1796175749448'))
    apply2 = (b'\x01\x02' + ctl_text(b'C1') + ctl_text(b'broker-a') + ctl_text(b'127.0.0.1:30921')
              + struct.pack('>q', 2) + ctl_text(b'127.0.0.1:30921;1796175749999'))
    elect1 = b'\x01\x03' + ctl_text(b'broker-a') + b'\x01' + struct.pack('>q', 1)
    alter = b'\x01\x01' + ctl_text(b'broker-a') + ctl_ids([1, 2])
    nobody = b'\x01\x03' + ctl_text(b'broker-a') + b'\x00' + struct.pack('>q', 0)
    update = (b'\x01\x06' + ctl_text(b'C1') + ctl_text(b'broker-a') + ctl_text(b'127.0.0.1:30931')
              + struct.pack('>q', 2))
    clean = b'\x01\x05' + ctl_text(b'broker-a') + ctl_ids([2])
    clean_all = b'\x01\x05' + ctl_text(b'broker-a') + ctl_ids([])
    return [('apply-first', apply1), ('apply-second', apply2), ('elect', elect1), ('alter', alter),
            ('elect-nobody', nobody), ('update-address', update), ('clean-id', clean),
            ('clean-set', clean_all)]


def ctl_snapshot():
    """A snapshot of broker-a with replicas 1 and 2, master 1, set {1,2}."""
    s = b'RMQC\x01' + struct.pack('>I', 1)
    s += ctl_text(b'broker-a') + ctl_text(b'C1') + b'\x07' + struct.pack('>qI', 3, 2)
    s += struct.pack('>q', 1) + ctl_text(b'127.0.0.1:30911') + ctl_text(b'127.0.0.1:30911;1')
    s += struct.pack('>q', 2) + ctl_text(b'127.0.0.1:30921') + ctl_text(b'127.0.0.1:30921;2')
    s += struct.pack('>qii', 1, 1, 2) + ctl_ids([1, 2])
    return s


def main():
    n = {}
    for path, head, body in frames():
        code = head.get('code')
        ext = head.get('extFields') or {}
        base = os.path.basename(os.path.dirname(os.path.dirname(path))) + '-' + os.path.basename(path)[:-4]
        if code == 103 and body:
            mode = version_mode(head.get('version', 0))
            if ext.get('compressed') == 'true':
                mode |= 8
            put('fuzz_regbody', base, bytes([mode]) + body)
            n['fuzz_regbody'] = n.get('fuzz_regbody', 0) + 1
        elif code == 318 and body:
            put('fuzz_bodies', base, b'\x01' + body)
            put('fuzz_properties', base, body)
        elif code == 322 and body and n.get('dv', 0) < 3:
            n['dv'] = n.get('dv', 0) + 1
            put('fuzz_regbody', base, bytes([5]) + body)
    topics = [b'TopicA 8 8 6 SINGLE_TAG', b'TopicB 4 4 7 SINGLE_TAG {}', b'-1 +2 -3 4 MULTI_TAG']
    mapping = (b'{"bname":"b1","currIdMap":{"0":0,"1":1},"dirty":false,"epoch":7,'
               b'"scope":"__global__","topic":"TopicA","totalQueues":2}')
    put('fuzz_regbody', 'compressed-layout-413', bytes([4 | 8 | 16]) + compressed_layout(topics, b'["f:1"]', [mapping]))
    put('fuzz_regbody', 'compressed-layout-412', bytes([3 | 8 | 16]) + compressed_layout(topics, b'[]', None))
    put('fuzz_regbody', 'compressed-sniffed', bytes([5]) + zlib.compress(compressed_layout(topics, b'[]', [])))
    put('fuzz_regbody', 'wrapper-36', bytes([1]) + b'{"dataVersion":{"counter":1,"timestamp":2},'
        b'"topicConfigTable":{"T":{"perm":6,"readQueueNums":1,"topicName":"T","writeQueueNums":1}}}')
    put('fuzz_bodies', 'register-topic', b'\x00{"queueDatas":[{"brokerName":"b1","perm":6,"readQueueNums":4,'
        b'"writeQueueNums":4,"topicSysFlag":0},{"brokerName":"b2","perm":"2","readQueueNums":1,'
        b'"writeQueueNums":1,"topicSynFlag":1}],"brokerDatas":[]}')
    put('fuzz_bodies', 'register-topic-unknown-group', b'\x00{"queueDatas":[{"brokerName":"zz","perm":6}]}')
    put('fuzz_bodies', 'update-config', b'\x01defaultThreadPoolNums=8\nclientRequestThreadPoolNums=2\n')
    put('fuzz_bodies', 'update-config-black-list', b'\x01configStorePath=/x\nkvConfigPath=/y\n')
    put('fuzz_bodies', 'order-conf', b'\x02broker-a:4;broker-b:4')
    put('fuzz_bodies', 'order-conf-odd', b'\x02"\\/\x7f\xc3\xa9\xe2\x80\xa8\x01')
    put('fuzz_properties', 'continuations', b'# comment\n! bang\nkey = value \\\n   continued\na:b\nc d\n'
        b'\\u0041=\\u00e9\\t\\n\nempty\n  \\ lead=x\n')
    put('fuzz_properties', 'latin1', b'k=\xe9\xff\r\nk2=v\r')
    put('fuzz_properties', 'etc-rmqns.conf', open(os.path.join(ROOT, '..', '..', 'etc', 'rmqns.conf'), 'rb').read())
    put('fuzz_kv_load', 'java-shape', b'{"configTable":{"ORDER_TOPIC_CONFIG":{"TopicA":"broker-a:4"},'
        b'"NS":{"k":"v","\\u00e9":"\\"q\\""}}}')
    put('fuzz_kv_load', 'empty-table', b'{"configTable":{}}')
    put('fuzz_kv_load', 'empty-namespace', b'{"configTable":{"NS":{}}}\n')
    # fuzz_route scripts: op byte (bit 7: with a failing allocation), then arguments
    put('fuzz_route', 'register-two-groups', bytes([0, 0x00, 0x00, 0x06, 1, 0x11, 0x22,
                                                   0, 0x09, 0x04, 0x0e, 2, 0x33, 0x44, 0x55,
                                                   6, 0x01, 7, 0x00, 7, 0x80, 9, 7]))
    put('fuzz_route', 'expire-and-close', bytes([0, 0x00, 0x20, 0x03, 1, 0, 0, 5, 250, 5, 251, 4, 1, 9, 7]))
    put('fuzz_route', 'acting-master', bytes([0, 0x00, 0x0c, 0x03, 1, 0, 0, 0, 0x08, 0x0d, 0x03, 1, 0, 0,
                                             3, 0x00, 0x80, 10, 0x04]))
    put('fuzz_route', 'failing-allocations', bytes([0x80, 3, 0x00, 0x00, 0x03, 1, 0, 0,
                                                   0x80, 7, 0x00, 0x00, 0x03, 1, 0, 0, 0x88, 1, 2, 1, 0x33]))
    # fuzz_controller: mode byte (0 entry, 1 snapshot, 2 log of u16-length entries)
    log = b''
    for name, entry in ctl_events():
        put('fuzz_controller', 'entry-' + name, b'\x00' + entry)
        log += struct.pack('>H', len(entry)) + entry
    put('fuzz_controller', 'log-lifecycle', b'\x02' + log)
    put('fuzz_controller', 'snapshot-one-set', b'\x01' + ctl_snapshot())
    put('fuzz_controller', 'snapshot-empty', b'\x01RMQC\x01\x00\x00\x00\x00')
    for t in sorted(os.listdir(OUT)):
        print(t, len(os.listdir(os.path.join(OUT, t))))


if __name__ == '__main__':
    main()
