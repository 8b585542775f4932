// The AWS SDK warns on stderr that it will drop Node 20; that notice is for us, not for Cairn's users.
// Imported before the SDK; worker threads inherit the environment variable.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
