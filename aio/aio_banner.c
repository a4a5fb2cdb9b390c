/*
 * aio_banner.c — iolake-aio's banner (aio_banner.h).
 */
#include "aio/aio_banner.h"

#include <stdio.h>

void aio_banner_print(const struct aio_opts *o, int n_osds, const char *ak, const char *sk)
{
	printf("IOLake aio is up: %d OSDs (%u+%u), data in %s\n", n_osds, o->k, o->m, o->data_dir);
	printf("  S3 endpoint:  %s://%s:%d\n", gw_front_scheme(&o->front), o->s3.host, o->s3.port);
	printf("  meta admin:   %s:%d   (iolake-admin --data-dir %s cluster status)\n",
	       o->madm.host, o->madm.port, o->data_dir);
	printf("  admin API:    http://%s:%d/api/v1/\n", o->api.host, o->api.port);
	printf("  console:      http://%s:%d/console/\n", o->api.host, o->api.port);
	if (!o->native_off)
		printf("  native:       %s:%d   (iolake --endpoint %s:%d ls BUCKET)\n", o->native.host,
		       o->native.port, o->native.host, o->native.port);
	printf("  access key:   %s\n", ak);
	printf("  secret key:   %s\n", sk);
	printf("  region:       %s\n", o->region);
	printf("Try:\n");
	printf("  export AWS_ACCESS_KEY_ID=%s AWS_SECRET_ACCESS_KEY=%s AWS_DEFAULT_REGION=%s\n",
	       ak, sk, o->region);
	printf("  aws --endpoint-url %s://%s:%d s3 mb s3://demo\n", gw_front_scheme(&o->front), o->s3.host,
	       o->s3.port);
	fflush(stdout);
}
