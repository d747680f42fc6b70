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
if let flag = arguments.firstIndex(of: "--map-max-rms-m") {
    guard flag + 1 < arguments.count, let metres = Double(arguments[flag + 1]), metres.isFinite, metres > 0, metres <= 10_000 else {
        refuse("--map-max-rms-m takes metres, more than 0 and at most 10000")
    }
    options.mapMaxRMSMeters = metres
    arguments.removeSubrange(flag...(flag + 1))
}
/// `services.catalog.signing_key` of the suite file (`--config FILE` or TOURBUS_CONFIG), if it has one.
/// The runtime reads and checks the file itself afterwards; here only this one key is looked up.
func suiteSigningKey(_ arguments: [String], _ environment: [String: String]) -> String? {
    let flag = arguments.lastIndex(of: "--config").flatMap { $0 + 1 < arguments.count ? arguments[$0 + 1] : nil }
    guard let path = flag ?? environment["TOURBUS_CONFIG"], let data = FileManager.default.contents(atPath: path), data.count <= 1 << 20,
          let suite = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
          let catalog = (suite["services"] as? [String: Any])?["catalog"] as? [String: Any], let value = catalog["signing_key"] else {
        return nil
    }
    guard let file = value as? String, !file.isEmpty else { refuse("config file \(path): services.catalog.signing_key must be the path of a key file") }
    return file
}
// Precedence as for every setting: the flag, then the environment, then the suite file.
let environment = ProcessInfo.processInfo.environment
var signingKeyFile = environment["TOURBUS_SIGNING_KEY"] ?? suiteSigningKey(arguments, environment)
if let flag = arguments.firstIndex(of: "--signing-key") {
    guard flag + 1 < arguments.count, !arguments[flag + 1].isEmpty else { refuse("--signing-key takes the key file tourbus keys --signing wrote") }
    signingKeyFile = arguments[flag + 1]
    arguments.removeSubrange(flag...(flag + 1))
}
if let signingKeyFile {
    do {
        options.signingKey = try SigningKey(keyFile: signingKeyFile)
    } catch {
        refuse("\(error)")
    }
}
var stringsDir = ProcessInfo.processInfo.environment["TOURBUS_STRINGS_DIR"].flatMap { $0.isEmpty ? nil : $0 }
if let flag = arguments.firstIndex(of: "--strings-dir") {
    guard flag + 1 < arguments.count else { refuse("--strings-dir needs a directory") }
    stringsDir = arguments[flag + 1]
    arguments.removeSubrange(flag...(flag + 1))
}
if let stringsDir {
    do {
        options.strings = try InterfaceStrings(directory: stringsDir)
    } catch {
        refuse("--strings-dir \(stringsDir): \(error)")
    }
}
// `--default-timezone ZONE` (or TOURBUS_DEFAULT_TIMEZONE): the IANA zone a place with seasons
// and no timezone of its own is given (default UTC).
if let zone = ProcessInfo.processInfo.environment["TOURBUS_DEFAULT_TIMEZONE"] { options.defaultTimezone = zone }
if let flag = arguments.firstIndex(of: "--default-timezone") {
    guard flag + 1 < arguments.count else { refuse("--default-timezone takes an IANA time zone name (such as Australia/Sydney)") }
    options.defaultTimezone = arguments[flag + 1]
    arguments.removeSubrange(flag...(flag + 1))
}
guard options.defaultTimezone.utf8.count <= 64, TimeZone(identifier: options.defaultTimezone) != nil else {
    refuse("--default-timezone: '\(options.defaultTimezone.prefix(64))' is not an IANA time zone name (such as Australia/Sydney)")
}
ServiceRuntime.main(CatalogService.definition(options: options), arguments: arguments)
