//! What the AWS SDK clients (DynamoDB leases, Secrets Manager) share.

use aws_sdk_dynamodb::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};

/// `"<code>: <message>"` of a service error, or the whole error chain of a transport failure
/// (no code then), so every error names what the service said. A service error's raw response
/// is left out: it says nothing more, at length.
pub fn describe_sdk_error<E, R>(err: &SdkError<E, R>) -> String
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug,
{
    match err.code() {
        Some(code) => format!("{code}: {}", err.message().unwrap_or("(no message)")),
        None => format!("{}", DisplayErrorContext(err)),
    }
}
