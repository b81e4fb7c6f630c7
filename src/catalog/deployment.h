/*
 * deployment.h - a deployment's id: what keeps two deployments on one
 * engine apart (the label of its images and containers, the prefix of
 * its session containers' names; docs/prewarm.md, docs/sessions.md).
 * Thread rule: none needed (no state).
 */
#ifndef SBX_DEPLOYMENT_H
#define SBX_DEPLOYMENT_H

struct sbx_error;

#define DEPLOYMENT_DEFAULT "default"
#define DEPLOYMENT_LABEL "io.sbxcat.deployment"
#define DEPLOYMENT_MAX 63

/*
 * Is id 1 to 63 of [a-z0-9_.-], beginning with a letter or a digit (it
 * ends a tag and a label value)?  Invalid if not, naming
 * SBXCAT_DEPLOYMENT_ID, where it comes from.
 */
int deployment_check(const char *id, struct sbx_error **err);

#endif
