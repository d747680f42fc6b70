import Foundation
import ServiceKit
import SocialService

let options: SocialOptions
do {
    options = try SocialOptions(environment: ProcessInfo.processInfo.environment)
} catch {
    FileHandle.standardError.write(Data("tourbus-social: \(error)\n".utf8))
    exit(2)
}
ServiceRuntime.main(SocialService.definition(options: options))
