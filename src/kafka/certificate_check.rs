//! Why a broker's certificate was refused.
//!
//! librdkafka reports one message, "certificate verify failed: broker certificate could not be
//! verified, verify that ssl.ca.location is correctly configured", for every refused
//! certificate: one no trusted CA signed, one that does not name the host connected to, one
//! that has expired. OpenSSL knows which; librdkafka does not pass it on. After such a
//! failure we make one TLS handshake of our own to the same broker, with the same trust store
//! and host check, and ask OpenSSL. Nothing else is sent on that connection (no credentials):
//! it is closed after the handshake.

use std::io;
use std::net::{IpAddr, SocketAddr, TcpStream, ToSocketAddrs};
use std::path::Path;
use std::time::Duration;

use openssl::nid::Nid;
use openssl::ssl::{HandshakeError, Ssl, SslContext, SslMethod, SslVerifyMode};
use openssl::x509::{X509Ref, X509VerifyResult, X509};

/// Bound of the connection and the handshake: the check runs on a failure path.
const TIMEOUT: Duration = Duration::from_secs(3);

/// How librdkafka was told to check the broker's certificate (its own setting names).
pub struct Trust<'a> {
    /// `ssl.ca.location`: a PEM file or a directory of hashed certificates.
    pub ca_location: Option<&'a str>,
    /// `ssl.ca.pem`: certificates inline.
    pub ca_pem: Option<&'a str>,
    /// `ssl.endpoint.identification.algorithm` is not `none`.
    pub check_host: bool,
}

impl<'a> Trust<'a> {
    /// Where the trusted CAs come from, in the words of `mm2.properties`.
    fn store(&self) -> String {
        match (self.ca_location, self.ca_pem) {
            (Some(location), _) => format!("the trust store {location}"),
            (None, Some(_)) => "ssl.truststore.certificates".into(),
            (None, None) => "the system's CA certificates (no ssl.truststore.location)".into(),
        }
    }

    /// The trust settings of a librdkafka config (`get` reads one setting).
    pub fn of(get: impl Fn(&str) -> Option<&'a str>) -> Self {
        Trust {
            ca_location: get("ssl.ca.location").filter(|l| !l.is_empty() && *l != "probe"),
            ca_pem: get("ssl.ca.pem").filter(|p| !p.is_empty()),
            check_host: get("ssl.endpoint.identification.algorithm") != Some("none"),
        }
    }
}

/// Why `broker` (`host:port`) fails `trust`, in words, or `None` when our own handshake
/// accepts its certificate (or cannot be made): then there is nothing to add.
pub fn explain(broker: &str, trust: &Trust) -> Option<String> {
    let (host, _) = broker.rsplit_once(':')?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let ssl = client(host, trust).ok()?;
    let tcp = connect(broker).ok()?;
    let (verdict, certificate) = match ssl.connect(tcp) {
        Ok(stream) => (
            stream.ssl().verify_result(),
            stream.ssl().peer_certificate(),
        ),
        Err(HandshakeError::Failure(mid)) => {
            (mid.ssl().verify_result(), mid.ssl().peer_certificate())
        }
        Err(_) => return None,
    };
    if verdict == X509VerifyResult::OK {
        return None;
    }
    let certificate = certificate?;
    let raw = verdict.as_raw();
    Some(
        if raw == openssl_sys::X509_V_ERR_HOSTNAME_MISMATCH
            || raw == openssl_sys::X509_V_ERR_IP_ADDRESS_MISMATCH
        {
            format!(
                "the broker's certificate does not name {host} (it names {}): connect by a \
                 name it holds",
                names(&certificate)
            )
        } else {
            format!(
                "the broker's certificate ({}) fails verification: {}{}",
                describe(&certificate),
                verdict.error_string(),
                if unknown_issuer(raw) {
                    format!("; no CA in {} signed it", trust.store())
                } else {
                    String::new()
                }
            )
        },
    )
}

/// OpenSSL's verdicts for a chain that ends at no trusted CA.
fn unknown_issuer(raw: i32) -> bool {
    use openssl_sys as ffi;
    [
        ffi::X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT,
        ffi::X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY,
        ffi::X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT,
        ffi::X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN,
        ffi::X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE,
    ]
    .contains(&raw)
}

/// A TLS client that verifies as librdkafka would, but finishes the handshake whatever the
/// verdict, so that the verdict can be read.
fn client(host: &str, trust: &Trust) -> Result<Ssl, openssl::error::ErrorStack> {
    let mut context = SslContext::builder(SslMethod::tls_client())?;
    match (trust.ca_location, trust.ca_pem) {
        (Some(location), _) if Path::new(location).is_dir() => {
            context.load_verify_locations(None, Some(Path::new(location)))?
        }
        (Some(location), _) => context.set_ca_file(location)?,
        (None, Some(pem)) => {
            for certificate in X509::stack_from_pem(pem.as_bytes())? {
                context.cert_store_mut().add_cert(certificate)?;
            }
        }
        (None, None) => context.set_default_verify_paths()?,
    }
    context.set_verify(SslVerifyMode::NONE);
    let mut ssl = Ssl::new(&context.build())?;
    match host.parse::<IpAddr>() {
        Ok(ip) if trust.check_host => ssl.param_mut().set_ip(ip)?,
        Ok(_) => {}
        Err(_) => {
            ssl.set_hostname(host)?;
            if trust.check_host {
                ssl.param_mut().set_host(host)?;
            }
        }
    }
    Ok(ssl)
}

fn connect(broker: &str) -> io::Result<TcpStream> {
    let address: SocketAddr = broker
        .to_socket_addrs()?
        .next()
        .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no address"))?;
    let tcp = TcpStream::connect_timeout(&address, TIMEOUT)?;
    tcp.set_read_timeout(Some(TIMEOUT))?;
    tcp.set_write_timeout(Some(TIMEOUT))?;
    Ok(tcp)
}

/// The host names and addresses a certificate is for: its subject alternative names, else its
/// common name.
fn names(certificate: &X509Ref) -> String {
    let alternatives: Vec<String> = certificate
        .subject_alt_names()
        .map(|names| {
            names
                .iter()
                .filter_map(|n| {
                    n.dnsname().map(str::to_string).or_else(|| {
                        let ip = n.ipaddress()?;
                        let ip: IpAddr = match ip.len() {
                            4 => <[u8; 4]>::try_from(ip).ok()?.into(),
                            16 => <[u8; 16]>::try_from(ip).ok()?.into(),
                            _ => return None,
                        };
                        Some(ip.to_string())
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    if alternatives.is_empty() {
        common_name(certificate).unwrap_or_else(|| "no host name".into())
    } else {
        alternatives.join(", ")
    }
}

/// Subject and issuer common names, for an error.
fn describe(certificate: &X509Ref) -> String {
    let issuer = certificate
        .issuer_name()
        .entries_by_nid(Nid::COMMONNAME)
        .next()
        .and_then(|e| e.data().to_string().ok());
    format!(
        "CN={}, issued by CN={}",
        common_name(certificate).unwrap_or_default(),
        issuer.unwrap_or_default()
    )
}

fn common_name(certificate: &X509Ref) -> Option<String> {
    let entry = certificate
        .subject_name()
        .entries_by_nid(Nid::COMMONNAME)
        .next()?;
    entry.data().to_string().ok()
}
