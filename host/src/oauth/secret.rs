//! The secrets the authorization server hands out (access and refresh tokens,
//! authorization codes, sign-in codes): 256 random bits from the OS, URL-safe, with
//! a prefix naming the kind so a token pasted in the wrong place is recognised.
//! Only their SHA-256 digests are stored, so a copy of the database grants nothing.

/// What a secret is for; its prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Access,
    Refresh,
    Code,
    SignIn,
}

impl Kind {
    fn prefix(self) -> &'static str {
        match self {
            Kind::Access => "wh_at_",
            Kind::Refresh => "wh_rt_",
            Kind::Code => "wh_ac_",
            Kind::SignIn => "wh_si_",
        }
    }

    /// Whether `secret` has this kind's prefix (not whether it is valid).
    pub(crate) fn marks(self, secret: &str) -> bool {
        secret.starts_with(self.prefix())
    }
}

/// A new secret of `kind`.
pub(crate) fn new(kind: Kind) -> String {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).expect("the OS random source is available");
    format!("{}{}", kind.prefix(), crate::base64::encode_url(&bytes))
}

/// The key a secret is stored under: its SHA-256 digest in hex.
pub(crate) fn digest(secret: &str) -> String {
    hex(ring::digest::digest(&ring::digest::SHA256, secret.as_bytes()).as_ref())
}

/// A random identifier for records that are not secrets (families, client ids).
pub(crate) fn id(prefix: &str) -> String {
    crate::ids::new_id(prefix)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_random_prefixed_and_stored_as_digests() {
        let a = new(Kind::Access);
        let b = new(Kind::Access);
        assert_ne!(a, b);
        assert!(Kind::Access.marks(&a) && !Kind::Refresh.marks(&a));
        assert_eq!(a.len(), "wh_at_".len() + 43);
        assert!(
            a.bytes()
                .all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-')
        );
        assert_eq!(digest(&a).len(), 64);
        assert_ne!(digest(&a), digest(&b));
        assert_eq!(
            digest("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
