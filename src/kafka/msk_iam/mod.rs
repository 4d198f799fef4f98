//! MSK IAM authentication: Java's `AWS_MSK_IAM` and `IAMOAuthBearerLoginCallbackHandler`
//! settings, served by librdkafka's OAUTHBEARER mechanism with MSK's IAM token.

pub mod token;
