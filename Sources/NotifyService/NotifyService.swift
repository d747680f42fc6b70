import Bus
import Contracts
import Foundation
import ServiceCore
import ServiceKit

/// Settings of the notify service that are not the runtime's.
public struct NotifyOptions: Sendable {
    /// The time in milliseconds since 1970: annotation times, report windows, purges. Tests
    /// move it by hand.
    public var clock: @Sendable () -> Int64 = { Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)) }
    /// A form (JSON as `deploy/notify-form.json`) stored at start when the database has none
    /// (`tourbus-notify --form FILE`); checked by the caller before it is set here.
    public var initialForm: Data?
    /// The most bytes the items of one page of a list take, encoded: 256 KiB.
    public var pageBudgetBytes = 256 * 1_024
    /// Annotations one `annotations.nearby` page reads, at most (`NearestPage`).
    public var nearbyReadBudget = 5_000
    /// The most bytes the alerts of one push (and of the reply to `notify.location`) take,
    /// encoded: 48 KiB, so a push stays well under `Push.maxEnvelopeBytes`. Alerts past it
    /// are counted in `more`, as those past `AlertRules.pushLimit` are.
    public var pushBudgetBytes = 48 * 1_024
    /// `annotations.sync`'s `next_poll_s` from 05:00 to 23:00 in the caller's time zone, and
    /// from 23:00 to 05:00.
    public var dayPollSeconds = 60
    public var nightPollSeconds = 600
    /// What one user may do, so that no one fills a city or holds the one writer: submit this
    /// many annotations a minute, keep this many live, have a report judged this often.
    public var submitsPerMinute = 10
    public var liveAnnotationsPerUser = 100
    public var reportIntervalMs: Int64 = 1_000
    /// How long a deleted user's late writes (signed in before the deletion) are refused.
    public var erasedUserWindowMs: Int64 = 600_000

    public init() {}
}

/// The notify service (issue 12): map annotations submitted through a form, proximity alerts
/// when a user's reported position comes near a fresh one, and each user's inbox of alerts.
///
/// Every write runs on the one writer thread; a position report is judged (`AlertRules`) and
/// its effects stored in one transaction, and its one push leaves after that commits.
public enum NotifyService {
    /// Page sizes of every list.

    /// The definition `ServiceRuntime` runs.
    public static func definition(options: NotifyOptions = NotifyOptions()) -> ServiceDefinition<NotifyStore> {
        var table = HandlerTable<NotifyStore>()

        // The form.
        table.on(Methods.Annotations.form) {
            (request: FormRequest, _, store) -> FormView in
            try store.formView(request)
        }
        table.on(Methods.Annotations.formSet) { (_: FormReplacement, _, context, store) -> FormSet in
            try store.setForm(context)
        }

        // Annotations.
        table.on(Methods.Annotations.submit) { (request: SubmitRequest, caller, _, store) -> AnnotationJSON in
            try store.submit(request, caller: caller)
        }
        table.on(Methods.Annotations.get) { (request: AnnotationRef, _, store) -> AnnotationJSON in
            guard let found = try store.liveAnnotation(request.id, now: store.now) else { throw NotifyStore.noAnnotation(request.id) }
            return found.wire()
        }
        table.on(Methods.Annotations.delete) { (request: AnnotationRef, caller, _, store) -> AnnotationDeleted in
            try store.delete(request.id, caller: caller)
            return AnnotationDeleted(id: request.id)
        }
        table.on(Methods.Annotations.nearby) {
            (request: NearbyRequest, _, store) -> AnnotationPage in
            try store.nearby(request)
        }
        table.on(Methods.Annotations.viewport) {
            (request: ViewportRequest, _, store) -> AnnotationPage in
            try store.viewport(request)
        }
        table.on(Methods.Annotations.import) { (request: ImportRequest, caller, _, store) -> Imported in
            try store.importAnnotations(request, caller: caller)
        }
        table.on(Methods.Annotations.sync) { (request: SyncRequest, context, store) -> SyncPage in
            try store.sync(request, caller: try Caller.optional(context).map(store.admit))
        }
        table.on(Methods.Annotations.purge) {
            (_: Empty, _, store) -> Purged in
            try store.purge()
        }

        // Settings, reports, inbox.
        table.on(Methods.Notify.settingsGet) { (_: Empty, caller, _, store) -> SettingsJSON in
            try store.settingsJSON(of: caller.id)
        }
        table.on(Methods.Notify.settingsSet) { (request: SettingsChange, caller, _, store) -> SettingsJSON in
            try store.setSettings(request, caller: caller)
        }
        table.on(Methods.Notify.location) { (request: LocationRequest, caller, _, store) -> AlertList in
            try store.report(request, caller: caller)
        }
        table.on(Methods.Notify.inbox) { (request: InboxRequest, caller, _, store) -> InboxPage in
            try store.inbox(request, caller: caller)
        }
        table.on(Methods.Notify.ack) { (request: AckRequest, caller, _, store) -> Acked in
            try store.ack(request.ids, caller: caller)
        }

        let initialForm = options.initialForm
        let erased = RecentlyErased(windowMilliseconds: options.erasedUserWindowMs)
        var definition = ServiceDefinition(
            name: "notify", migrations: NotifySchema.migrations, handlers: table, publishes: true,
            // A deleted account's data goes with it (`Erasure`).
            subscriptions: ["social": Erasure.socialApplier(clock: options.clock, erased: erased)],
            makeState: { worker in
                let store = NotifyStore(worker: worker, options: options, erased: erased)
                if let initialForm { try store.storeInitialForm(initialForm) }
                return store
            })
        definition.periodic = [PeriodicRequest(Methods.Annotations.purge, intervalMilliseconds: NotifyStore.purgeIntervalMilliseconds)]
        return definition
    }

    /// A page size: `limit` (default 20), 1 to 100.
    static func limit(_ value: Int?) throws(ServiceError) -> Int { try PageLimit.annotations.validated(value) }
}
