import Bus
import CatalogService
import Foundation
import Sealing
import ServiceKit

// This executable's own flags:
// `--map-max-rms-m M`: tours.map.set refuses control points whose RMS residual is over M metres (default 25).
// `--signing-key FILE` (or TOURBUS_SIGNING_KEY, or the suite file's services.catalog.signing_key): the server's Ed25519 key file (tourbus keys --signing),
// which signs library.add's packages; a file others may read, or that holds no key pair, stops the start.
// `--strings-dir DIR` (or TOURBUS_STRINGS_DIR): the interface strings strings.get answers, the
// repo's i18n/; a directory with a bad file stops the start with a message naming it.
var arguments = Array(CommandLine.arguments.dropFirst())
var options = CatalogOptions()
func refuse(_ message: String) -> Never {
    FileHandle.standardError.write(Data("tourbus-catalog: \(message)\n".utf8))
    exit(2)
}
/// The value after `flag`, taken out of the arguments (the runtime refuses flags it does not
/// know); nil when the flag is absent, and `refuse(usage)` when no value follows or `valid` refuses it.
@MainActor func take(_ flag: String, _ usage: String, valid: (String) -> Bool = { !$0.isEmpty }) -> String? {
    guard let at = arguments.firstIndex(of: flag) else { return nil }
    guard at + 1 < arguments.count, valid(arguments[at + 1]) else { refuse(usage) }
    defer { arguments.removeSubrange(at...(at + 1)) }
    return arguments[at + 1]
}
if let metres = take(
    "--map-max-rms-m", "--map-max-rms-m takes metres, more than 0 and at most 10000",
    valid: {
        Double($0).map { $0.isFinite && $0 > 0 && $0 <= 10_000 } ?? false
    }
).flatMap(Double.init) {
    options.mapMaxRMSMeters = metres
}
/// `services.catalog.signing_key` of the suite file (`--config FILE` or TOURBUS_CONFIG), if it has one.
/// The runtime reads and checks the file itself afterwards; here only this one key is looked up.
func suiteSigningKey(_ arguments: [String], _ environment: [String: String]) -> String? {
    let flag = arguments.lastIndex(of: "--config").flatMap { $0 + 1 < arguments.count ? arguments[$0 + 1] : nil }
    guard let path = flag ?? environment["TOURBUS_CONFIG"], let data = FileManager.default.contents(atPath: path), data.count <= 1 << 20,
        let suite = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
        let catalog = (suite["services"] as? [String: Any])?["catalog"] as? [String: Any], let value = catalog["signing_key"]
    else {
        return nil
    }
    guard let file = value as? String, !file.isEmpty else { refuse("config file \(path): services.catalog.signing_key must be the path of a key file") }
    return file
}
// Precedence as for every setting: the flag, then the environment, then the suite file.
let environment = ProcessInfo.processInfo.environment
let signingKeyFile =
    take("--signing-key", "--signing-key takes the key file tourbus keys --signing wrote")
    ?? environment["TOURBUS_SIGNING_KEY"] ?? suiteSigningKey(arguments, environment)
if let signingKeyFile {
    do {
        options.signingKey = try SigningKey(keyFile: signingKeyFile)
    } catch {
        refuse("\(error)")
    }
}
if let stringsDir = take("--strings-dir", "--strings-dir needs a directory", valid: { _ in true })
    ?? environment["TOURBUS_STRINGS_DIR"].flatMap({ $0.isEmpty ? nil : $0 })
{
    do {
        options.strings = try InterfaceStrings(directory: stringsDir)
    } catch {
        refuse("--strings-dir \(stringsDir): \(error)")
    }
}
// `--default-timezone ZONE` (or TOURBUS_DEFAULT_TIMEZONE): the IANA zone a place with seasons
// and no timezone of its own is given (default UTC).
if let zone = take("--default-timezone", "--default-timezone takes an IANA time zone name (such as Australia/Sydney)", valid: { _ in true })
    ?? environment["TOURBUS_DEFAULT_TIMEZONE"]
{
    options.defaultTimezone = zone
}
guard options.defaultTimezone.utf8.count <= 64, TimeZone(identifier: options.defaultTimezone) != nil else {
    refuse("--default-timezone: '\(Echo.clip(options.defaultTimezone, maxBytes: 64))' is not an IANA time zone name (such as Australia/Sydney)")
}
ServiceRuntime.main(CatalogService.definition(options: options), arguments: arguments)
