import CatalogService
import Foundation
import ServiceKit

// `--map-max-rms-m M` (this executable's own flag): tours.map.set refuses control points whose
// RMS residual is over M metres (default 25).
var arguments = Array(CommandLine.arguments.dropFirst())
var options = CatalogOptions()
if let flag = arguments.firstIndex(of: "--map-max-rms-m") {
    guard flag + 1 < arguments.count, let metres = Double(arguments[flag + 1]), metres.isFinite, metres > 0, metres <= 10_000 else {
        FileHandle.standardError.write(Data("tourbus-catalog: --map-max-rms-m takes metres, more than 0 and at most 10000\n".utf8))
        exit(2)
    }
    options.mapMaxRMSMeters = metres
    arguments.removeSubrange(flag...(flag + 1))
}
ServiceRuntime.main(CatalogService.definition(options: options), arguments: arguments)
