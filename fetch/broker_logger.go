package fetch

import (
	"fmt"
	"log/slog"
	"math"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// kafkaLevels maps Kafka's log level names (LogLevelConfig) onto slog
// levels, lowest first. slog has four levels, 4 apart; the others are
// placed on the same scale:
//   - TRACE is one step below DEBUG (slog.LevelDebug-4): segfs has no
//     trace-only lines, so TRACE logs what DEBUG logs.
//   - FATAL is one step above ERROR (slog.LevelError+4): segfs logs
//     nothing above ERROR (a fatal error ends the process with a message
//     on stderr, not through the logger), so FATAL silences the log as
//     OFF does.
//   - OFF is the highest level there is: nothing is logged.
//
// Kafka matches names case-sensitively (VALID_LOG_LEVELS.contains), and
// so does segfs.
var kafkaLevels = []struct {
	name  string
	level slog.Level
}{
	{"TRACE", slog.LevelDebug - 4},
	{"DEBUG", slog.LevelDebug},
	{"INFO", slog.LevelInfo},
	{"WARN", slog.LevelWarn},
	{"ERROR", slog.LevelError},
	{"FATAL", slog.LevelError + 4},
	{"OFF", slog.Level(math.MaxInt32)},
}

// validLevels is Kafka's list of valid levels as its refusal names them:
// sorted by name (RuntimeLoggerManager.VALID_LOG_LEVELS_STRING).
const validLevels = "DEBUG, ERROR, FATAL, INFO, OFF, TRACE, WARN"

// levelName is the Kafka name of the level l logs from: the highest named
// level at or below l (a level set at start is one of the named ones).
func levelName(l slog.Level) string {
	name := kafkaLevels[0].name
	for _, k := range kafkaLevels {
		if k.level <= l {
			name = k.name
		}
	}
	return name
}

// levelByName is the slog level of a Kafka level name.
func levelByName(name string) (slog.Level, bool) {
	for _, k := range kafkaLevels {
		if k.name == name {
			return k.level, true
		}
	}
	return 0, false
}

// alterBrokerLogger answers an IncrementalAlterConfigs of the broker
// logger resource as Kafka's RuntimeLoggerManager does, after the
// duplicate and null value checks every resource gets (alterResource):
// the name must be this broker's id
// (INVALID_REQUEST); every operation is checked before any is applied, so
// a refused request changes nothing. segfs has one logger, root (its slog
// logger, shared by the mount and the Kafka server through
// Config.LogLevel): SET to one of Kafka's level names changes the level
// at once; any other logger is INVALID_CONFIG ("does not exist"), as is an
// unknown level; DELETE of root is INVALID_REQUEST (Kafka never unsets the
// root logger's level); APPEND, SUBTRACT and unknown operations are
// INVALID_REQUEST. Without Config.LogLevel the level cannot change and any
// change is refused (alterUnchangeable).
func (s *Server) alterBrokerLogger(name string, ops []kmsg.IncrementalAlterConfigsRequestResourceConfig, validateOnly bool) (int16, string) {
	if s.cfg.LogLevel == nil {
		keys := make([]string, 0, len(ops))
		for _, op := range ops {
			keys = append(keys, op.Name)
		}
		return alterUnchangeable(kmsg.ConfigResourceTypeBrokerLogger, name, keys)
	}
	id, err := strconv.ParseInt(name, 10, 32)
	if err != nil {
		return kerr.InvalidRequest.Code, "Node id must be an integer, but it is: " + name
	}
	if id != nodeID {
		return kerr.InvalidRequest.Code, fmt.Sprintf("Unexpected node id. Expected %d, but received %d", nodeID, id)
	}
	var level slog.Level
	set := false
	for _, op := range ops {
		switch op.Op {
		case kmsg.IncrementalAlterConfigOpSet, kmsg.IncrementalAlterConfigOpDelete:
			if op.Name != rootLogger {
				return kerr.InvalidConfig.Code, fmt.Sprintf("Logger %s does not exist!", op.Name)
			}
			if op.Op == kmsg.IncrementalAlterConfigOpDelete {
				return kerr.InvalidRequest.Code, fmt.Sprintf("Removing the log level of the %s logger is not allowed", rootLogger)
			}
			l, ok := levelByName(*op.Value)
			if !ok {
				return kerr.InvalidConfig.Code, fmt.Sprintf("Cannot set the log level of %s to %s as it is not a supported log level. Valid log levels are %s",
					op.Name, *op.Value, validLevels)
			}
			level, set = l, true
		case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
			verb := "APPEND"
			if op.Op == kmsg.IncrementalAlterConfigOpSubtract {
				verb = "SUBTRACT"
			}
			return kerr.InvalidRequest.Code, verb + " operation is not allowed for the BROKER_LOGGER resource"
		default:
			return kerr.InvalidRequest.Code, fmt.Sprintf("Unknown operation type %d is not allowed for the BROKER_LOGGER resource", op.Op)
		}
	}
	if validateOnly || !set {
		return 0, ""
	}
	// Logged at WARN as Kafka does: a level of ERROR or above hides it.
	s.cfg.LogLevel.Set(level)
	s.log.Warn("fetch: updated the log level", "logger", rootLogger, "level", levelName(level))
	return 0, ""
}
