/// The notify service (issue 12): map annotations submitted through a form, proximity alerts
/// when a user's reported position comes near a fresh one, and each user's inbox of alerts.
/// Being built in steps; not yet an executable.
public enum NotifyService {}
