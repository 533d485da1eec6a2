// BluetoothCrypto — the LE security toolbox and link-layer encryption.
//
// What this layer is
//   The cryptographic functions of the Security Manager (Core 5.4 Vol 3 Part H §2.2): the AES-128 block function
//   `e`, the legacy pairing functions c1 and s1, the LE Secure Connections functions f4, f5, f6, g2, h6 and h7,
//   the random address hash ah (with helpers to generate and resolve resolvable private addresses), AES-CMAC,
//   P-256 key pairs, public-key validation and ECDH (DHKey), ATT data signing (Vol 3 Part H §2.4.5), and the
//   link layer's AES-CCM (Vol 6 Part E §2: session key, nonce, 4-octet MIC), with the spec's sample data
//   (Vol 6 Part C §1) in the tests.
//
// Byte order
//   The spec defines these functions on numbers and prints them most significant octet first. `Block128` holds a
//   128-bit value as a number and converts explicitly to `msbFirst` (spec/AES byte-string order) or
//   `littleEndian` (wire order: SMP, HCI, LL). 256-bit values (P-256 coordinates, DHKey) are `[UInt8]` MSB-first
//   inside the toolbox and little-endian only in `LEPublicKey.smpBytes`. Addresses come as `BluetoothAddress`,
//   whose type gives the address-type octet of c1/f5/f6.
//
// State and executors
//   Pure functions and immutable values, no state, any thread. `LEKeyPair` wraps a swift-crypto private key
//   (Sendable, immutable). `LinkLayerCipher` is an immutable value; `LinkLayerEncryptionSession` adds the two
//   packet counters and is a plain struct owned by one connection's link layer (the virtual controller), driven on
//   that stack's serial executor. Every function that touches AES throws `BluetoothCryptoError`
//   rather than trapping; with the typed inputs of this API only peer-controlled lengths/values can make it throw.
//
// Dependencies
//   BluetoothCore (addresses, hex), swift-crypto: Crypto (P256 key agreement) and CryptoExtras (`AES.permute`
//   for the single block, `AES.CMAC`). CCM with a 4-octet tag is built here over the AES block (RFC 3610).
