/// What an unfinished answer does once more than 5 minutes have passed since its last
/// event (`conformance/CLIENT_RULES.md` "Late resume"; vectors in `conformance/reconnect.json`).
///
/// The relay keeps a stream's events for 5 minutes after its last one, and a **finished**
/// answer for `RELAY_ANSWER_RETENTION` (24 h by default) after its end (docs/PROTOCOL.md
/// §6.5). The common phone case — the app is backgrounded (iOS suspends it within seconds),
/// the answer finishes on the server, the user comes back 10 minutes later — is therefore
/// recoverable: a resume from `lastEventId` gets the rest of the text as one delta and the
/// original `done`. So:
///
/// * idle ≤ 5 min, or the late resume already made and no event since → the usual rules
///   (`proceed`);
/// * idle > 5 min and the app was in the background at some moment since the last event →
///   in the foreground one **late resume** at once (`lateResume`), in the background wait
///   for the foreground (`waitForForeground`);
/// * idle > 5 min without a background since the last event — an answer that stopped
///   producing while the app watched it (a running answer idle > 5 min) → `needsResume`,
///   the idle rule as before: its events expired and nothing retains an unfinished answer.
///
/// A late resume answered `404` (not retained: retention off, an `error` ending, an answer
/// still running but silent > 5 min, or erased) or `204` ends in `needsResume` (`expired`),
/// never in a failure. Pure: times are arguments in ms.
public enum LateResumeRule {
    /// The idle limit, ms (5 min): `ReconnectPolicy.idleLimitMs`.
    public static var idleLimitMs: Int64 { ReconnectPolicy.idleLimitMs }

    /// What to do at this moment.
    public enum Decision: Sendable, Equatable {
        /// Not late (or the late resume is under way): the usual reconnect rules.
        case proceed
        /// Late, never backgrounded since the last event: the idle rule, `needsResume`.
        case needsResume
        /// Late after a background, still in the background: wait for the foreground.
        case waitForForeground
        /// Late after a background, in the foreground: reconnect from `lastEventId` at once.
        case lateResume
    }

    /// Decides. `idleMs`: time since the last event (or the request), on a clock that
    /// advances while the device sleeps; `backgroundSinceLastEvent`: the app was in the
    /// background at some moment since then; `lateResumeMade`: the late resume was made
    /// and no event has come since; `foreground`: the app is in the foreground now.
    public static func decide(idleMs: Int64, backgroundSinceLastEvent: Bool, lateResumeMade: Bool,
                              foreground: Bool) -> Decision {
        guard idleMs > idleLimitMs, !lateResumeMade else { return .proceed }
        guard backgroundSinceLastEvent else { return .needsResume }
        return foreground ? .lateResume : .waitForForeground
    }

    /// `true` for the answers to a late resume that mean the relay no longer has the
    /// answer: `404` (`stream_not_found`) and `204` → `needsResume`.
    public static func expired(status: Int) -> Bool { status == 404 || status == 204 }
}
