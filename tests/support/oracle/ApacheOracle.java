// Asks Apache Kafka's own classes what they make of config values, topic names and whole
// mm2.properties maps (MirrorMakerConfig's connector and worker configs), so the unit
// tests can compare mm2's answers with Apache's. One JSON array per stdin line, one JSON answer per
// stdout line. In Apache's package for the connector ConfigDefs, which are not public.
package org.apache.kafka.connect.mirror;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.ClientDnsLookup;
import org.apache.kafka.clients.ClientUtils;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigException;

public final class ApacheOracle {
    private static final ObjectMapper JSON = new ObjectMapper();

    private static ConfigDef definitions(String name) throws Exception {
        switch (name) {
            case "producer": return ProducerConfig.configDef();
            case "consumer": return ConsumerConfig.configDef();
            case "admin": return AdminClientConfig.configDef();
            case "source": return MirrorSourceConfig.CONNECTOR_CONFIG_DEF;
            case "checkpoint": return MirrorCheckpointConfig.CONNECTOR_CONFIG_DEF;
            case "heartbeat": return MirrorHeartbeatConfig.CONNECTOR_CONFIG_DEF;
            default:
                java.lang.reflect.Method top = MirrorMakerConfig.class.getDeclaredMethod("config");
                top.setAccessible(true);
                return (ConfigDef) top.invoke(null);
        }
    }

    /** ConfigDef.parse for one key: the type's parse, then the key's validator. */
    private static ObjectNode value(String defs, String key, String value) throws Exception {
        ObjectNode out = JSON.createObjectNode();
        ConfigDef.ConfigKey def = definitions(defs).configKeys().get(key);
        if (def == null) {
            return out.put("known", false);
        }
        out.put("known", true).put("type", def.type.name());
        try {
            Object parsed = ConfigDef.parseType(key, value, def.type);
            if (def.validator != null) {
                def.validator.ensureValid(key, parsed);
            }
            out.put("ok", true);
        } catch (ConfigException e) {
            out.put("ok", false).put("error", e.getMessage());
        }
        return out;
    }

    private static ObjectNode bootstrap(String value) {
        ObjectNode out = JSON.createObjectNode();
        try {
            List<String> urls = ConfigDef.parseType("bootstrap.servers", value, ConfigDef.Type.LIST) instanceof List<?> l
                ? toStrings(l) : new ArrayList<>();
            ClientUtils.parseAndValidateAddresses(urls, ClientDnsLookup.USE_ALL_DNS_IPS);
            out.put("ok", true);
        } catch (ConfigException | IllegalArgumentException e) {
            out.put("ok", false).put("error", String.valueOf(e.getMessage()));
        }
        return out;
    }

    private static List<String> toStrings(List<?> items) {
        List<String> out = new ArrayList<>();
        for (Object o : items) {
            out.add(String.valueOf(o));
        }
        return out;
    }

    private static ObjectNode policy(JsonNode settings, String topic) {
        Map<String, Object> props = new HashMap<>();
        settings.fields().forEachRemaining(e -> props.put(e.getKey(), e.getValue().asText()));
        DefaultReplicationPolicy policy = new DefaultReplicationPolicy();
        policy.configure(props);
        ObjectNode out = JSON.createObjectNode();
        out.put("remote", policy.formatRemoteTopic(String.valueOf(props.getOrDefault("source.cluster.alias", "a")), topic));
        out.put("source", policy.topicSource(topic));
        out.put("upstream", policy.upstreamTopic(topic));
        out.put("original", policy.originalTopic(topic));
        out.put("heartbeats", policy.isHeartbeatsTopic(topic));
        out.put("checkpoints", policy.isCheckpointsTopic(topic));
        out.put("offset_syncs_topic", policy.offsetSyncsTopic(topic));
        out.put("checkpoints_topic", policy.checkpointsTopic(topic));
        return out;
    }

    private static final String DISCOVERY = "plugin.discovery";

    /** MirrorMakerConfig's maps for herder source->target: each connector's base config (by
     * simple class name) and the worker's config, as Apache builds them from the raw props. */
    private static ObjectNode resolution(JsonNode settings, String source, String target) {
        Map<String, String> props = new HashMap<>();
        settings.fields().forEachRemaining(e -> props.put(e.getKey(), e.getValue().asText()));
        // MirrorMakerConfig scans the whole classpath for Connect plugins on every construction
        // (seconds each) unless told to read their ServiceLoader manifests; the key is taken out
        // of the answer again when the request did not carry it.
        boolean asked = props.containsKey(DISCOVERY);
        props.putIfAbsent(DISCOVERY, "service_load");
        MirrorMakerConfig config = new MirrorMakerConfig(props);
        SourceAndTarget pair = new SourceAndTarget(source, target);
        ObjectNode out = JSON.createObjectNode();
        ObjectNode connectors = out.putObject("connectors");
        for (Class<?> cls : List.of(MirrorSourceConnector.class, MirrorCheckpointConnector.class,
                MirrorHeartbeatConnector.class)) {
            ObjectNode map = connectors.putObject(cls.getSimpleName());
            config.connectorBaseConfig(pair, cls).forEach(map::put);
        }
        ObjectNode worker = out.putObject("worker");
        config.workerConfig(pair).forEach(worker::put);
        if (!asked) {
            worker.remove(DISCOVERY);
            connectors.forEach(map -> ((ObjectNode) map).remove(DISCOVERY));
        }
        ArrayNode pairs = out.putArray("pairs");
        config.clusterPairs().forEach(p -> pairs.add(p.source() + "->" + p.target()));
        return out;
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            JsonNode request = JSON.readTree(line);
            String kind = request.get(0).asText();
            ObjectNode answer;
            switch (kind) {
                case "value":
                    answer = value(request.get(1).asText(), request.get(2).asText(), request.get(3).asText());
                    break;
                case "bootstrap":
                    answer = bootstrap(request.get(1).asText());
                    break;
                case "policy":
                    answer = policy(request.get(1), request.get(2).asText());
                    break;
                case "resolution":
                    answer = resolution(request.get(1), request.get(2).asText(), request.get(3).asText());
                    break;
                default:
                    answer = JSON.createObjectNode().put("error", "unknown request " + kind);
            }
            System.out.println(JSON.writeValueAsString(answer));
            System.out.flush();
        }
    }
}
