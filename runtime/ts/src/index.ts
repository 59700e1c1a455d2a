// @tiogen/runtime: the TypeScript runtime of tiogen, a client of the
// transport-io protocol, version 0. The connectors are separate entry
// points (./webtransport, ./websocket, ./dev, ./fallback) so a bundle holds
// only the ones it uses; ./testing has an in-memory transport for tests.

export { Client, backoff, systemClock } from './client.js';
export type { CallOptions, ClientOptions, Handler, ReconnectOptions, Snapshot, Stats, Status } from './client.js';
export { compileContract } from './contract.js';
export type { CallSpec, CompiledContract, CompiledEvent, Contract, Decoder as DecodeHook, EventSpec, ReliableEmitSpec, Shape, SlotCodec, UnreliableEmitSpec, Validator } from './contract.js';
export {
  MaxDepth,
  ValidationError,
  byCodePoint,
  decodeBool,
  decodeBytes,
  decodeEnum,
  decodeFloat64,
  decodeInt32,
  decodeInt64,
  decodeJson,
  decodeList,
  decodeMap,
  decodeRecord,
  decodeString,
  decodeUint32,
  decodeUint64,
  encodeBool,
  encodeBytes,
  encodeEnum,
  encodeFloat64,
  encodeInt32,
  encodeInt64,
  encodeJson,
  encodeList,
  encodeMap,
  encodeRecord,
  encodeString,
  encodeUint32,
  encodeUint64,
  field,
  member,
  members,
  optionalField,
  optionalMember,
} from './typed.js';
export type { Decoder, Encoder, JsonValue, GeneratedClientOptionsV1 } from './typed.js';
export { RefusedError, StreamResetError, TransportError } from './errors.js';
export {
  LocalCodes,
  MaxCloseReason,
  MaxWebSocketReason,
  MessageCodes,
  ResetCode,
  SessionCode,
  codeNumber,
  remedy,
  resetCodeName,
  sessionCodeFromWebSocket,
  sessionCodeName,
  webSocketCloseCode,
} from './codes.js';
export type { CodeName, KnownCode, LocalCodeName, MessageCodeName, ResetCodeName, SessionCodeName } from './codes.js';
export type { CallStream, Clock, CloseInfo, Conn, ConnectContext, Connector, DatagramQueue, Mapping, Opened, ReceiveStream, SendStream } from './transport.js';
export type { Lane } from './wire/handshake.js';
