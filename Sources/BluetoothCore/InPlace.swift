/// Runs `body` on `value` in place.
///
/// A non-mutating method or computed property of a struct stored in a class, called on the stored property, works on
/// a copy of the struct (every reference in it retained, then released): the class's property could change during
/// the call. Through an inout access it does not. The per-packet paths of the host and the virtual controller call
/// their machines' queries this way (issue 31: a copy of a connection's link layer state was ~500 instructions).
@inlinable @inline(__always)
public func inPlace<Value, Result, Failure: Error>(_ value: inout Value,
                                                  _ body: (inout Value) throws(Failure) -> Result) throws(Failure) -> Result {
    try body(&value)
}
