// Lists the MBeans a JVM registers under the given ObjectName patterns, one line per attribute
// ("<object name>\t<attribute>"), over JMX remote on 127.0.0.1:<port>.
// Run as a single source file: java ListMBeans.java PORT PATTERN...
import javax.management.MBeanAttributeInfo;
import javax.management.MBeanServerConnection;
import javax.management.ObjectName;
import javax.management.remote.JMXConnector;
import javax.management.remote.JMXConnectorFactory;
import javax.management.remote.JMXServiceURL;

public class ListMBeans {
    public static void main(String[] args) throws Exception {
        JMXServiceURL url =
                new JMXServiceURL("service:jmx:rmi:///jndi/rmi://127.0.0.1:" + args[0] + "/jmxrmi");
        try (JMXConnector connector = JMXConnectorFactory.connect(url)) {
            MBeanServerConnection server = connector.getMBeanServerConnection();
            for (int i = 1; i < args.length; i++) {
                for (ObjectName name : server.queryNames(new ObjectName(args[i]), null)) {
                    for (MBeanAttributeInfo attribute : server.getMBeanInfo(name).getAttributes()) {
                        System.out.println(name + "\t" + attribute.getName());
                    }
                }
            }
        }
    }
}
