# Independent encoder (Python, written from the spec's layouts, not from the Go
# code) that produces vectors.json beside it: python3 gen_vectors.py
import hashlib, json, os, struct

def eid(name): return struct.unpack(">I", hashlib.sha256(name.encode()).digest()[:4])[0]
def frame(t, c, e, payload, length=None, reserved=0):
    if length is None: length = 8 + len(payload)
    return struct.pack(">IBBHI", length, t, c, reserved, e) + payload
def dgram(c, e, o, s, payload): return struct.pack(">BIII", c, e, o, s) + payload

TYPES = {1:"HANDSHAKE",2:"EMIT",3:"CALL_REQUEST",4:"CALL_RESPONSE",5:"CALL_ERROR",6:"JOIN",7:"LEAVE",8:"CALL_CREDIT",9:"DATAGRAM"}
hs_compact = b'{"v":0,"feat":[],"events":[["chat",836792189,"reliable"],["cursor",1185214141,"unreliable"],["save",360565394,"reliable"]]}'
dg_inner = dgram(1, eid("cursor"), 0x00400001, 7, b'{"x":1,"y":2}')

frames = [
 dict(name="spec §5 EMIT example", clause="§5", type=2, codec=1, eventId=eid("chat"), payloadHex="aabb"),
 dict(name="HANDSHAKE (§4.3 table, compact)", clause="§4.1", type=1, codec=1, eventId=0, payloadHex=hs_compact.hex()),
 dict(name="EMIT bytes codec", clause="§5.3", type=2, codec=2, eventId=eid("save"), payloadHex="00ff"),
 dict(name="CALL_REQUEST", clause="§6.2", type=3, codec=1, eventId=eid("save"), payloadHex=b'{"id":7}'.hex()),
 dict(name="CALL_RESPONSE", clause="§6.3", type=4, codec=1, eventId=0, payloadHex=b'true'.hex()),
 dict(name="CALL_RESPONSE bytes codec", clause="§6.3", type=4, codec=2, eventId=0, payloadHex="01"),
 dict(name="CALL_ERROR", clause="§6.4", type=5, codec=1, eventId=0, payloadHex=b'{"code":"WT_VALIDATION_FAILED","message":"field \'body\' must be a string"}'.hex()),
 dict(name="JOIN", clause="§6.5", type=6, codec=1, eventId=0, payloadHex=b'{"room":"lobby"}'.hex()),
 dict(name="LEAVE", clause="§6.5", type=7, codec=1, eventId=0, payloadHex=b'{"room":"lobby"}'.hex()),
 dict(name="CALL_CREDIT", clause="§6.6", type=8, codec=1, eventId=0, payloadHex=b'{"credit":16}'.hex()),
 dict(name="DATAGRAM frame carrying a §7.1 datagram", clause="§3.3", type=9, codec=1, eventId=0, payloadHex=dg_inner.hex()),
 dict(name="EMIT at the 1 MiB cap", clause="§5.1", type=2, codec=2, eventId=eid("chat"), payloadHex="", payloadRepeat=dict(hex="78", count=1<<20)),
 dict(name="CALL_RESPONSE over 1 MiB (call cap)", clause="§5.1", type=4, codec=2, eventId=0, payloadHex="", payloadRepeat=dict(hex="78", count=(1<<20)+1)),
]
for f in frames:
    p = bytes.fromhex(f["payloadHex"])
    rep = f.get("payloadRepeat")
    if rep: p += bytes.fromhex(rep["hex"]) * rep["count"]
    whole = frame(f["type"], f["codec"], f["eventId"], p)
    f["hex"] = whole.hex() if not rep else whole[:12].hex()

PE, TL, UC = "WT_PROTOCOL_ERROR", "WT_PAYLOAD_TOO_LARGE", "WT_UNSUPPORTED_CODEC"
chat = eid("chat")
invalid = [
 ("length 0", "§5.1", struct.pack(">I", 0), PE),
 ("length 8 (header, no payload)", "§5.1", frame(2,1,chat,b'', length=8), PE),
 ("EMIT length 1048585 (1 MiB + 1 payload)", "§5.1", frame(2,1,chat,b'', length=1048585), TL),
 ("HANDSHAKE over the 1 MiB cap", "§5.1", frame(1,1,0,b'', length=1048585), TL),
 ("CALL_REQUEST over the 16 MiB cap", "§5.1", frame(3,1,chat,b'', length=16*1024*1024+9), TL),
 ("CALL_ERROR over the 16 MiB cap", "§5.1", frame(5,1,0,b'', length=16*1024*1024+9), TL),
 ("length 0xFFFFFFFF on EMIT", "§5.1", frame(2,1,chat,b'', length=0xFFFFFFFF), TL),
 ("reserved type 0x00", "§5.2", frame(0,1,0,b'x'), PE),
 ("reserved type 0x0A", "§5.2", frame(0x0A,1,0,b'x'), PE),
 ("reserved type 0xFF", "§5.2", frame(0xFF,1,0,b'x'), PE),
 ("reserved bits 0x0001", "§5.1", frame(2,1,chat,b'x', reserved=1), PE),
 ("reserved bits 0x8000", "§5.1", frame(2,1,chat,b'x', reserved=0x8000), PE),
 ("codec 0x00", "§5.3", frame(2,0,chat,b'x'), UC),
 ("codec 0x03", "§5.3", frame(2,3,chat,b'x'), UC),
 ("codec 0xFF on CALL_RESPONSE", "§5.3", frame(4,0xFF,0,b'x'), UC),
 ("HANDSHAKE with codec 0x02", "§5.3", frame(1,2,0,b'{}'), PE),
 ("JOIN with codec 0x02", "§5.3", frame(6,2,0,b'x'), PE),
 ("LEAVE with codec 0x02", "§5.3", frame(7,2,0,b'x'), PE),
 ("CALL_ERROR with codec 0x02", "§5.3", frame(5,2,0,b'x'), PE),
 ("CALL_CREDIT with codec 0x02", "§5.3", frame(8,2,0,b'x'), PE),
 ("DATAGRAM frame with codec 0x02", "§5.3", frame(9,2,0,b'x'), PE),
 ("EMIT with event id 0", "§5.4", frame(2,1,0,b'x'), PE),
 ("CALL_REQUEST with event id 0", "§5.4", frame(3,1,0,b'x'), PE),
 ("HANDSHAKE with an event id", "§5.4", frame(1,1,chat,b'{}'), PE),
 ("CALL_RESPONSE with an event id", "§5.4", frame(4,1,chat,b'x'), PE),
 ("CALL_ERROR with an event id", "§5.4", frame(5,1,chat,b'x'), PE),
 ("JOIN with an event id", "§5.4", frame(6,1,chat,b'x'), PE),
 ("LEAVE with an event id", "§5.4", frame(7,1,chat,b'x'), PE),
 ("CALL_CREDIT with an event id", "§5.4", frame(8,1,chat,b'x'), PE),
 ("DATAGRAM frame with an event id", "§5.4", frame(9,1,chat,b'x'), PE),
 ("order: reserved type beats the cap", "§5.2", frame(0x0A,1,0,b'', length=0x7FFFFFFF), PE),
 ("order: the cap beats reserved bits and codec", "§5.1", frame(2,0,0,b'', length=1048585, reserved=1), TL),
 ("order: reserved bits beat the codec", "§5.1", frame(2,0,chat,b'x', reserved=1), PE),
 ("order: codec beats the event id rule", "§5.3", frame(2,3,0,b'x'), UC),
 ("all-zero buffer", "§5.3", bytes(16), PE),
]
invalid = [dict(name=n, clause=c, hex=b.hex(), code=code) for n,c,b,code in invalid]

truncated = [
 ("empty stream", "", "EOF"),
 ("two bytes of the length", "0000", "UnexpectedEOF"),
 ("length only", "0000000a", "UnexpectedEOF"),
 ("header, no payload", frame(2,1,chat,b'\xaa\xbb')[:12].hex(), "UnexpectedEOF"),
 ("one payload byte of two", frame(2,1,chat,b'\xaa\xbb')[:13].hex(), "UnexpectedEOF"),
 ("CALL_RESPONSE header claiming 16 MiB, then end", frame(4,2,0,b'', length=16*1024*1024+8).hex(), "UnexpectedEOF"),
]
truncated = [dict(name=n, hex=h, error=e) for n,h,e in truncated]

datagrams = [
 dict(name="cursor datagram", clause="§7.1", codec=1, eventId=eid("cursor"), origin=0x00400001, seq=7, payloadHex=b'{"x":1,"y":2}'.hex()),
 dict(name="bytes datagram at u32 extremes", clause="§7.1", codec=2, eventId=0xFFFFFFFF, origin=0xFFFFFFFF, seq=0xFFFFFFFF, payloadHex="00"),
]
for d in datagrams: d["hex"] = dgram(d["codec"], d["eventId"], d["origin"], d["seq"], bytes.fromhex(d["payloadHex"])).hex()
invalid_dg = [
 ("empty (liveness probe)", "§7.2", b'', "discard"),
 ("12 bytes", "§7.2", dgram(1,eid("cursor"),1,1,b'')[:12], "discard"),
 ("header only, zero-length payload", "§7.2", dgram(1,eid("cursor"),1,1,b''), PE),
 ("codec 0x00", "§5.3", dgram(0,eid("cursor"),1,1,b'x'), UC),
 ("codec 0x03", "§5.3", dgram(3,eid("cursor"),1,1,b'x'), UC),
 ("event id 0", "§7.2", dgram(1,0,1,1,b'x'), PE),
 ("all-zero 13 bytes", "§7.2", bytes(13), UC),
]
invalid_dg = [dict(name=n, clause=c, hex=b.hex(), code=code) for n,c,b,code in invalid_dg]

spec41 = '{ "v": 0, "feat": [], "events": [["chat", 836792189, "reliable"]] }'
spec43 = '{ "v": 0, "feat": [],\n  "events": [["chat", 836792189, "reliable"], ["cursor", 1185214141, "unreliable"], ["save", 360565394, "reliable"]] }'
handshakes = [
 dict(name="spec §4.1 example, as printed", clause="§4.1", json=spec41, encodes=False, v=0, feat=[], events=[["chat",836792189,"reliable"]]),
 dict(name="spec §4.1 example, compact", clause="§4.1", json='{"v":0,"feat":[],"events":[["chat",836792189,"reliable"]]}', encodes=True, v=0, feat=[], events=[["chat",836792189,"reliable"]]),
 dict(name="spec §4.3 example, as printed", clause="§4.3", json=spec43, encodes=False, v=0, feat=[], events=[["chat",836792189,"reliable"],["cursor",1185214141,"unreliable"],["save",360565394,"reliable"]]),
 dict(name="spec §4.3 example, compact", clause="§4.3", json=hs_compact.decode(), encodes=True, v=0, feat=[], events=[["chat",836792189,"reliable"],["cursor",1185214141,"unreliable"],["save",360565394,"reliable"]]),
 dict(name="an event name escaping a surrogate pair", clause="§5.3", json='{"v":0,"feat":[],"events":[["\\ud83d\\ude00",1,"reliable"]]}', encodes=False, v=0, feat=[], events=[["😀",1,"reliable"]]),
 dict(name="features, escapes and code point order", clause="§4.3", json='{"v":0,"feat":["emit-per-room","x-unknown"],"events":[["Zed",3,"reliable"],["a\\"q\\\\\\n\\u0001",1,"unreliable"],["é",4,"reliable"],["😀",2,"reliable"]]}', encodes=True, v=0, feat=["emit-per-room","x-unknown"], events=[["Zed",3,"reliable"],["a\"q\\\n\u0001",1,"unreliable"],["é",4,"reliable"],["😀",2,"reliable"]]),
]
invalid_hs = [
 ("not JSON", 'hello'), ("array, not object", '[]'), ("null", 'null'),
 ("missing v", '{"feat":[],"events":[]}'), ("missing feat", '{"v":0,"events":[]}'), ("missing events", '{"v":0,"feat":[]}'),
 ("extra field", '{"v":0,"feat":[],"events":[],"token":"x"}'),
 ("duplicate field", '{"v":0,"v":0,"feat":[],"events":[]}'),
 ("v a string", '{"v":"0","feat":[],"events":[]}'), ("v fractional", '{"v":0.5,"feat":[],"events":[]}'),
 ("v with exponent", '{"v":1e0,"feat":[],"events":[]}'), ("v null", '{"v":null,"feat":[],"events":[]}'),
 ("feat null", '{"v":0,"feat":null,"events":[]}'), ("feat of numbers", '{"v":0,"feat":[1],"events":[]}'),
 ("events an object", '{"v":0,"feat":[],"events":{}}'), ("events null", '{"v":0,"feat":[],"events":null}'),
 ("event with 2 elements", '{"v":0,"feat":[],"events":[["chat",836792189]]}'),
 ("event with 4 elements", '{"v":0,"feat":[],"events":[["chat",836792189,"reliable",1]]}'),
 ("event name a number", '{"v":0,"feat":[],"events":[[1,836792189,"reliable"]]}'),
 ("event id a string", '{"v":0,"feat":[],"events":[["chat","836792189","reliable"]]}'),
 ("event id negative", '{"v":0,"feat":[],"events":[["chat",-1,"reliable"]]}'),
 ("event id above u32", '{"v":0,"feat":[],"events":[["chat",4294967296,"reliable"]]}'),
 ("event id fractional", '{"v":0,"feat":[],"events":[["chat",1.5,"reliable"]]}'),
 ("event id 0", '{"v":0,"feat":[],"events":[["chat",0,"reliable"]]}'),
 ("unknown lane", '{"v":0,"feat":[],"events":[["chat",836792189,"ordered"]]}'),
 ("duplicate event name", '{"v":0,"feat":[],"events":[["chat",1,"reliable"],["chat",2,"reliable"]]}'),
 ("duplicate event id", '{"v":0,"feat":[],"events":[["a",1,"reliable"],["b",1,"reliable"]]}'),
 ("trailing data", '{"v":0,"feat":[],"events":[]} {}'),
 ("truncated", '{"v":0,"feat":[],"events":['),
 # §5.3: an escaped surrogate that pairs with none names no character;
 # readers that differ on it (U+FFFD or kept) would read two names.
 ("a feature escaping a high surrogate alone", '{"v":0,"feat":["\\ud800"],"events":[]}'),
 ("an event name escaping a low surrogate alone", '{"v":0,"feat":[],"events":[["\\udc00",1,"reliable"]]}'),
 ("surrogates escaped in the wrong order", '{"v":0,"feat":[],"events":[["\\ude00\\ud83d",1,"reliable"]]}'),
 ("an unpaired surrogate in an ignored place", '{"v":0,"feat":[],"events":[],"\\ud800":1}'),
 # v beyond 2^53-1: not every JSON reader holds it exactly.
 ("v beyond 2^53-1", '{"v":9007199254740992,"feat":[],"events":[]}'),
]
invalid_hs = [dict(name=n, json=j, code=PE) for n,j in invalid_hs]
# §4.2: a v other than 0, written as an integer, is another version's
# handshake, refused WT_PROTOCOL_VERSION_MISMATCH whatever else it holds,
# since what a later version adds is its own; a v that is itself malformed,
# or an object JSON itself refuses, stays a protocol error.
VM = "WT_PROTOCOL_VERSION_MISMATCH"
invalid_hs += [dict(name=n, json=j, code=c) for n,j,c in [
 ("v 1", '{"v":1,"feat":[],"events":[]}', VM),
 ("v 1 with a field v0 lacks", '{"v":1,"feat":[],"events":[],"resume":true}', VM),
 ("v 1 with an event table of another shape", '{"events":[{"name":"chat","id":1}],"v":1}', VM),
 ("v 1 and nothing else", '{"v":1}', VM),
 ("v 1 with a fraction in another field", '{"v":1,"ratio":0.5}', VM),
 ("v -1", '{"v":-1,"feat":[],"events":[]}', VM),
 ("v with exponent and a field v0 lacks", '{"v":1e0,"resume":true}', PE),
 ("v 1 twice", '{"v":1,"v":1}', PE),
 ("v 1 with an unpaired surrogate in another field", '{"v":1,"x":"\\ud800"}', PE),
]]

ws = [dict(sessionCode=c, webSocket=1000 if c==0 else 3000+c) for c in [0,1000,1001,1002,1003,1004,1005,1006,1007]]

doc = {
 "description": "transport-io protocol v0 golden vectors. Bytes are lowercase hex. Every valid vector must encode to exactly these bytes and decode to exactly these fields; every invalid one must be rejected with the code given. Produced by gen_vectors.py beside this file, an encoder written independently of the Go codec from the spec's layouts, and read by the Go tests (runtime/wire) and the TypeScript tests alike. Frame and datagram fields are numbers; eventId is SHA-256(name)[0:4] big-endian (§5.4). payloadRepeat appends count copies of hex to payloadHex, to keep cap-sized vectors small; such vectors give only the 12-byte header in hex.",
 "frames": frames, "invalidFrames": invalid, "truncatedFrames": truncated,
 "datagrams": datagrams, "invalidDatagrams": invalid_dg,
 "handshakes": handshakes, "invalidHandshakes": invalid_hs,
 "webSocketCloseCodes": ws,
}
open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "vectors.json"), "w").write(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
