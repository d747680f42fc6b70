import Foundation
import NotifyService
import ServiceKit

// `--form FILE` (this executable's own flag): a form stored at start when the database has none.
var arguments = Array(CommandLine.arguments.dropFirst())
var options = NotifyOptions()
if let flag = arguments.firstIndex(of: "--form") {
    guard flag + 1 < arguments.count else {
        FileHandle.standardError.write(Data("tourbus-notify: --form needs a file\n".utf8))
        exit(2)
    }
    let path = arguments[flag + 1]
    arguments.removeSubrange(flag...(flag + 1))
    do {
        let json = try Data(contentsOf: URL(fileURLWithPath: path))
        _ = try AnnotationForm(json: json)
        options.initialForm = json
    } catch {
        FileHandle.standardError.write(Data("tourbus-notify: --form \(path): \(error)\n".utf8))
        exit(2)
    }
}
ServiceRuntime.main(NotifyService.definition(options: options), arguments: arguments)
