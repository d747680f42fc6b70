import Testing
@testable import NotifyService
