// The AWS SDK (which tests and benchmarks use to drive buckets; Cairn itself does not load it) warns on
// stderr that it will drop Node 20. Imported before the SDK; child processes inherit the variable.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
