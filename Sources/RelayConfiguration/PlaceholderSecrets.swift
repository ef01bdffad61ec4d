import Foundation

/// Secrets still holding the placeholder of the shipped examples (`.env.example`,
/// `deploy/k8s/secret.yaml`: values containing `CHANGE-ME`). `stream-relay serve` refuses to
/// start with one (docs/DEPLOYING.md): a relay signing nothing real, or guarded by a key anyone
/// can read in this repository, must not run. Pure.
public enum PlaceholderSecrets {
    /// The examples' placeholder marker, matched case-insensitively.
    public static let marker = "CHANGE-ME"

    /// The variables of `config` whose value contains the marker, in a fixed order.
    public static func found(in config: RelayConfig) -> [String] {
        let secrets: [(String, String?)] = [
            ("RELAY_JWT_SECRET", config.jwtSecret), ("RELAY_ADMIN_KEY", config.adminKey),
            ("RELAY_COMPLETION_WEBHOOK_SECRET", config.completionWebhookSecret),
            ("UPSTREAM_API_KEY", config.upstreamAPIKey), ("RELAY_UPSTREAM_IDENTITY_SECRET", config.upstreamIdentitySecret), ("RELAY_ENCRYPTION_KEYS", config.encryptionKeys),
            ("REDIS_URL", config.redis.map { String(describing: $0) }),
        ]
        return secrets.compactMap { name, value in
            (value?.range(of: marker, options: .caseInsensitive) != nil) ? name : nil
        }
    }

    /// What to say for `variables` (non-empty): which ones, and how to make a real value.
    public static func message(_ variables: [String]) -> String {
        "\(variables.joined(separator: ", ")) still \(variables.count == 1 ? "holds" : "hold") the CHANGE-ME placeholder of "
            + ".env.example / deploy/k8s/secret.yaml: set a real value (a secret or key: `openssl rand -base64 48`; "
            + "RELAY_COMPLETION_WEBHOOK_SECRET: whsec_ and `openssl rand -base64 32`; UPSTREAM_API_KEY: your provider's key)"
    }
}
