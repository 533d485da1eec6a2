// `import CoreBluetooth` brings Foundation with it on Apple platforms (Data, UUID, NSNumber in every signature);
// so does `import OpenCoreBluetooth`, so the import swap is the only change an app needs.
@_exported public import Foundation
