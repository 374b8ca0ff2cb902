//! The TLS client configuration every outbound connection shares: the webpki
//! roots, the ring provider named explicitly (the process-wide default may be
//! unset or differ), ALPN `http/1.1` (the only protocol the client speaks), and
//! server names that may be IP literals.

use rustls::pki_types::{InvalidDnsNameError, ServerName};
use std::net::IpAddr;
use std::sync::{Arc, OnceLock};

/// The shared connector, built once per process.
pub(super) fn connector() -> tokio_rustls::TlsConnector {
    static CONFIG: OnceLock<Arc<rustls::ClientConfig>> = OnceLock::new();
    let config = CONFIG.get_or_init(|| {
        let roots = rustls::RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.into(),
        };
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("ring supports the default TLS versions")
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Arc::new(config)
    });
    tokio_rustls::TlsConnector::from(config.clone())
}

/// The name the certificate must match: an IP address for an IP literal (checked
/// against the certificate's IP SANs), else a DNS name.
pub(super) fn server_name(host: &str) -> Result<ServerName<'static>, InvalidDnsNameError> {
    match host.parse::<IpAddr>() {
        Ok(ip) => Ok(ServerName::from(ip)),
        Err(_) => ServerName::try_from(host.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ip_literals_and_dns_names_are_server_names() {
        assert!(matches!(server_name("127.0.0.1"), Ok(ServerName::IpAddress(_))));
        assert!(matches!(server_name("::1"), Ok(ServerName::IpAddress(_))));
        assert!(matches!(
            server_name("api.example.com"),
            Ok(ServerName::DnsName(_))
        ));
        assert!(server_name("not a host").is_err());
    }
}
