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
    static let pageLimit = PageLimit(default: 20, max: 100)

    /// The definition `ServiceRuntime` runs.
    public static func definition(options: NotifyOptions = NotifyOptions()) -> ServiceDefinition<NotifyStore> {
        var table = HandlerTable<NotifyStore>()

        // The form.
        table.on("annotations.form", description: "the annotation form; with lat and lon only the choices valid there; lang for labels") {
            (request: FormRequest, _, store) -> FormView in
            try store.formView(request)
        }
        table.onRaw("annotations.form.set", .write, description: "replace the form with {form} of a greater version (admins only)") { context, store in
            let reply = try store.setForm(context)
            return Response(body: try JSONCoding.encoder.encode(reply))
        }

        // Annotations.
        table.on("annotations.submit", .write, description: "post an annotation: lat, lon, values of the form, text up to 500 characters") {
            (request: SubmitRequest, context, store) -> AnnotationJSON in
            try store.submit(request, caller: try store.caller(context))
        }
        table.on("annotations.get", description: "a live annotation by id") { (request: AnnotationRef, _, store) -> AnnotationJSON in
            guard let found = try store.liveAnnotation(request.id, now: store.now) else { throw NotifyStore.noAnnotation(request.id) }
            return found.wire()
        }
        table.on("annotations.delete", .write, description: "delete an annotation by id (its author or an admin)") {
            (request: AnnotationRef, context, store) -> AnnotationDeleted in
            try store.delete(request.id, caller: try store.caller(context))
            return AnnotationDeleted(id: request.id)
        }
        table.on("annotations.nearby", description: "live annotations within radius_m of lat, lon, nearest first, paged") {
            (request: NearbyRequest, _, store) -> AnnotationPage in
            try store.nearby(request)
        }
        table.on("annotations.viewport", description: "live annotations inside south, west, north, east, by id, paged") {
            (request: ViewportRequest, _, store) -> AnnotationPage in
            try store.viewport(request)
        }
        table.on("annotations.import", .write, description: "load annotations from another system: lat, lon, values, text?, created_at (last 12 h), external_id (admins only)") {
            (request: ImportRequest, context, store) -> Imported in
            try store.importAnnotations(request, caller: try store.caller(context))
        }
        table.on("annotations.sync", description: "what changed since the cursor (all live ones without it), in a box if given, and when to ask again") {
            (request: SyncRequest, context, store) -> SyncPage in
            try store.sync(request, caller: try context.auth.map { _ in try store.caller(context) })
        }
        table.on("annotations.purge", .write, description: "internal (the service's own, every minute): delete what is older than 12 h") {
            (_: Empty, _, store) -> Purged in
            try store.purge()
        }

        // Settings, reports, inbox.
        table.on("notify.settings.get", description: "your alert settings") { (_: Empty, context, store) -> SettingsJSON in
            try store.settingsJSON(of: try store.caller(context).id)
        }
        table.on("notify.settings.set", .write, description: "change alerts, radius_m (50-5000), timezone, app_timer_min, idle_timer_min") {
            (request: SettingsChange, context, store) -> SettingsJSON in
            try store.setSettings(request, caller: try store.caller(context))
        }
        table.on("notify.location", .write, description: "report your position (lat, lon, at?): the alerts it makes, also pushed as notify.alert") {
            (request: LocationRequest, context, store) -> AlertList in
            try store.report(request, caller: try store.caller(context))
        }
        table.on("notify.inbox", description: "your alerts not yet acknowledged, oldest first, paged") {
            (request: InboxRequest, context, store) -> InboxPage in
            try store.inbox(request, caller: try store.caller(context))
        }
        table.on("notify.ack", .write, description: "acknowledge inbox entries by ids (at most 100)") { (request: AckRequest, context, store) -> Acked in
            try store.ack(request.ids, caller: try store.caller(context))
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
        definition.periodic = [PeriodicRequest(type: "annotations.purge", intervalMilliseconds: NotifyStore.purgeIntervalMilliseconds)]
        return definition
    }

    /// A page size: `limit` (default 20), 1 to 100.
    static func limit(_ value: Int?) throws(ServiceError) -> Int { try pageLimit.validated(value) }
}
