/*
 * err.c — texts and names for the error table in err.h.
 */
#include "common/err.h"

#include <errno.h>
#include <string.h>

const char *iol_strerror(int err)
{
	switch (err) {
#define IOL_ERR_TEXT(name, code, text, retry) case -(code): return text;
	IOL_ERRORS(IOL_ERR_TEXT)
#undef IOL_ERR_TEXT
	default:
		break;
	}
	if (err < 0 && -err < IOL_ERR_BASE)
		return strerror(-err);
	return err == 0 ? "success" : "unknown error";
}

const char *iol_errname(int err)
{
	switch (err) {
#define IOL_ERR_NAME(name, code, text, retry) case -(code): return #name;
	IOL_ERRORS(IOL_ERR_NAME)
#undef IOL_ERR_NAME
	default:
		break;
	}
	if (err < 0 && -err < IOL_ERR_BASE) {
		const char *n = strerrorname_np(-err);
		return n ? n : "EUNKNOWN";
	}
	return err == 0 ? "OK" : "EUNKNOWN";
}

bool iol_err_retryable(int err)
{
	switch (err) {
#define IOL_ERR_RETRY(name, code, text, retry) case -(code): return retry;
	IOL_ERRORS(IOL_ERR_RETRY)
#undef IOL_ERR_RETRY
	case -EAGAIN:
	case -EINTR:
	case -ECONNREFUSED:
	case -ECONNRESET:
	case -ETIMEDOUT:
	case -EHOSTUNREACH:
		return true;
	default:
		return false;
	}
}
