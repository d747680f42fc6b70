import Bus

// The notify service's methods: annotations and their form, alerts, positions and the inbox.
// Declared once here; the service binds its handlers to them (see Method.swift).

extension Methods.Annotations {
    public static let form = Method<FormRequest, FormView>(
        "annotations.form", .notify, .anyone, .read,
        "the annotation form; with lat and lon only the choices valid there; lang for labels",
        errors: [.notFound(nil, "no form has been set yet")])
    public static let formSet = Method<FormReplacement, FormSet>(
        "annotations.form.set", .notify, .admin, .write,
        "replace the form with {form} of a greater version (admins only)",
        errors: [.conflict("form.version", "the version is not greater than the current one")])
    public static let submit = Method<SubmitRequest, AnnotationJSON>(
        "annotations.submit", .notify, .user, .write,
        "post an annotation: lat, lon, values of the form, text up to 500 characters",
        errors: [
            .unavailable(nil, "no form has been set yet"),
            .rateLimited(nil, "10 annotations in the last minute, or 100 of yours live"),
        ])
    public static let get = Method<AnnotationRef, AnnotationJSON>(
        "annotations.get", .notify, .anyone, .read,
        "a live annotation by id",
        errors: [.notFound("id", "no live annotation has this id")])
    public static let delete = Method<AnnotationRef, AnnotationDeleted>(
        "annotations.delete", .notify, .user, .write,
        "delete an annotation by id (its author or an admin)",
        errors: [
            .notFound("id", "no live annotation has this id"),
            .permissionDenied(nil, "the caller is neither its author nor an admin"),
        ])
    public static let nearby = Method<NearbyRequest, AnnotationPage>(
        "annotations.nearby", .notify, .anyone, .read,
        "live annotations within radius_m of lat, lon, nearest first, paged")
    public static let viewport = Method<ViewportRequest, AnnotationPage>(
        "annotations.viewport", .notify, .anyone, .read,
        "live annotations inside south, west, north, east, by id, paged")
    public static let `import` = Method<ImportRequest, Imported>(
        "annotations.import", .notify, .admin, .write,
        "load annotations from another system: lat, lon, values, text?, created_at (last 12 h), external_id (admins only)",
        errors: [.unavailable(nil, "no form has been set yet")], retrySafe: true)
    public static let sync = Method<SyncRequest, SyncPage>(
        "annotations.sync", .notify, .anyone, .read,
        "what changed since the cursor (all live ones without it), in a box if given, and when to ask again")
    public static let purge = Method<Empty, Purged>(
        "annotations.purge", .notify, .internal, .write,
        "the service's own, every minute: delete what is older than 12 h")
}

extension Methods.Notify {
    public static let settingsGet = Method<Empty, SettingsJSON>(
        "notify.settings.get", .notify, .user, .read,
        "your alert settings")
    public static let settingsSet = Method<SettingsChange, SettingsJSON>(
        "notify.settings.set", .notify, .user, .write,
        "change alerts, radius_m (50-5000), timezone, app_timer_min, idle_timer_min", retrySafe: true)
    public static let location = Method<LocationRequest, AlertList>(
        "notify.location", .notify, .user, .write,
        "report your position (lat, lon, at?): the alerts it makes, also pushed as notify.alert",
        errors: [.rateLimited(nil, "too soon after your last report (1 s apart by default)")])
    public static let inbox = Method<InboxRequest, InboxPage>(
        "notify.inbox", .notify, .user, .read,
        "your alerts not yet acknowledged, oldest first, paged")
    public static let ack = Method<AckRequest, Acked>(
        "notify.ack", .notify, .user, .write,
        "acknowledge inbox entries by ids (at most 100)")
}

extension Methods {
    /// The methods the notify service answers.
    static let notifyOwned: [any DeclaresMethod] = [
        Methods.Annotations.form, Methods.Annotations.formSet, Methods.Annotations.submit,
        Methods.Annotations.get, Methods.Annotations.delete, Methods.Annotations.nearby,
        Methods.Annotations.viewport, Methods.Annotations.`import`, Methods.Annotations.sync,
        Methods.Annotations.purge, Methods.Notify.settingsGet, Methods.Notify.settingsSet,
        Methods.Notify.location, Methods.Notify.inbox, Methods.Notify.ack,
    ]
}
