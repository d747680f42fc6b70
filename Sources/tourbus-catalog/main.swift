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
// `--default-timezone ZONE` (or TOURBUS_DEFAULT_TIMEZONE): the IANA zone a place with seasons
// and no timezone of its own is given (default UTC).
if let zone = ProcessInfo.processInfo.environment["TOURBUS_DEFAULT_TIMEZONE"] { options.defaultTimezone = zone }
if let flag = arguments.firstIndex(of: "--default-timezone") {
    guard flag + 1 < arguments.count else {
        FileHandle.standardError.write(Data("tourbus-catalog: --default-timezone takes an IANA time zone name (such as Australia/Sydney)\n".utf8))
        exit(2)
    }
    options.defaultTimezone = arguments[flag + 1]
    arguments.removeSubrange(flag...(flag + 1))
}
guard options.defaultTimezone.utf8.count <= 64, TimeZone(identifier: options.defaultTimezone) != nil else {
    FileHandle.standardError.write(Data("tourbus-catalog: --default-timezone: '\(options.defaultTimezone.prefix(64))' is not an IANA time zone name (such as Australia/Sydney)\n".utf8))
    exit(2)
}
ServiceRuntime.main(CatalogService.definition(options: options), arguments: arguments)
