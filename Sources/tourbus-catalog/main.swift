import CatalogService
import Foundation
import ServiceKit

// This executable's own flags:
// `--map-max-rms-m M`: tours.map.set refuses control points whose RMS residual is over M metres (default 25).
// `--strings-dir DIR` (or TOURBUS_STRINGS_DIR): the interface strings strings.get answers, the
// repo's i18n/; a directory with a bad file stops the start with a message naming it.
var arguments = Array(CommandLine.arguments.dropFirst())
var options = CatalogOptions()
func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("tourbus-catalog: \(message)\n".utf8))
    exit(2)
}
if let flag = arguments.firstIndex(of: "--map-max-rms-m") {
    guard flag + 1 < arguments.count, let metres = Double(arguments[flag + 1]), metres.isFinite, metres > 0, metres <= 10_000 else {
        fail("--map-max-rms-m takes metres, more than 0 and at most 10000")
    }
    options.mapMaxRMSMeters = metres
    arguments.removeSubrange(flag...(flag + 1))
}
var stringsDir = ProcessInfo.processInfo.environment["TOURBUS_STRINGS_DIR"].flatMap { $0.isEmpty ? nil : $0 }
if let flag = arguments.firstIndex(of: "--strings-dir") {
    guard flag + 1 < arguments.count else { fail("--strings-dir needs a directory") }
    stringsDir = arguments[flag + 1]
    arguments.removeSubrange(flag...(flag + 1))
}
if let stringsDir {
    do {
        options.strings = try InterfaceStrings(directory: stringsDir)
    } catch {
        fail("--strings-dir \(stringsDir): \(error)")
    }
}
ServiceRuntime.main(CatalogService.definition(options: options), arguments: arguments)
