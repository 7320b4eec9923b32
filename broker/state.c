// SPDX-License-Identifier: MIT
/* A tenant's state, in words. */
#include "broker.h"

const char *rf_tenant_state_name(enum rf_tenant_state s)
{
	switch (s) {
	case RF_TENANT_STOPPED:
		return "stopped";
	case RF_TENANT_STARTING:
		return "starting";
	case RF_TENANT_RUNNING:
		return "running";
	case RF_TENANT_FAILED:
		return "failed";
	}
	return "?";
}
