/* Updates of the server's options that are refused (code 16) whatever the
 * configBlackList says: the keys that are always black-listed. */
#ifndef RMQNS_TEST_CONFIG_BLACK_H
#define RMQNS_TEST_CONFIG_BLACK_H

#define CONFIG_BLACK_REMARK "Can not update config in black list."

static const char *const config_always_black[] = {
	"kvConfigPath=/tmp/x",
	"configStorePath=/etc/cron.d/x",
	"rocketmqHome=/tmp",
	"configBlackList=",
};

#endif
